"""`python3 -m vgpu`: placeholder until the probe's table is printed here."""
