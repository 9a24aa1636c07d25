"""`kimodo-rig preview`: see a clip before you use it. An SVG contact sheet (svg.py) and a one-file HTML
player (html.py, three.js vendored in vendor/ with its MIT licence); scene.py gathers what both show."""
