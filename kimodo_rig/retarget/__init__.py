"""Retargeting onto a character: reading the rig (character; a Blender armature: armature), which bone
plays which part (mapping; where a tipped leg's line ends: ankles), the solve, the feet pass after it
(feet, with its parts: soles, lock, one_bone, hands), the written output and the report measured from it
(output, report); api for front ends."""
