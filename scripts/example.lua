-- Placeholder main job while the simulation core is built.
print("hbdlab " .. hl.version)
