"""Retargeting onto a character: reading the rig (character), which bone plays which part (mapping), the
solve, the written output and the report measured from it."""
