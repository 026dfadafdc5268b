-- tools/eplb_hierarchical.lua: SGLang's EPLB placement (DeepSeek's eplb.py, hierarchical policy when the groups
-- divide among the nodes), checked on a case worked by hand (issue 27, P6; docs/VALIDATION.md fid12).
local M = dofile "tools/eplb_hierarchical.lua"
local function near(a, b, what)
  assert(math.abs(a - b) <= 1e-12 * math.max(1, math.abs(b)), what .. ": " .. a .. " vs " .. b)
end

-- 8 experts in 4 groups of 2, 2 nodes, 4 GPUs, 12 slots (4 replicas). Loads 8 1 | 4 4 | 2 2 | 1 2.
-- Step 1, groups onto nodes (2 each): group loads 9, 8, 4, 3 in that order: 9 -> node 1, 8 -> node 2
-- (0 < 9), 4 -> node 2 (8 < 9), 3 -> node 1 (9 < 12): node 1 holds groups 1 and 4 (experts 8 1 1 2),
-- node 2 groups 2 and 3 (4 4 2 2), 12 each.
-- Step 2, node 1's 4 experts to 6 slots: 8/1 is the largest, then 8/2 = 4 > 2: expert 1 gets 3 copies of
-- 8/3; slots 8/3 8/3 8/3 1 1 2. Node 2: 4/1 (the first of two), then the other 4/1: slots 2 2 2 2 2 2.
-- Step 3, node 1's slots onto 2 GPUs (3 each), decreasing: 8/3 -> A, 8/3 -> B, 8/3 -> A (tie, the first),
-- 2 -> B (8/3 < 16/3), 1 -> B (14/3 < 16/3; B now full), 1 -> A: A 19/3, B 17/3. Node 2: 6 and 6.
-- Busiest / mean = (19/3) / 6 = 19/18.
local w = { 8, 1, 4, 4, 2, 2, 1, 2 }
local loads = M.rebalance(w, 4, 2, 4, 12)
assert(#loads == 4, "four GPUs")
near(loads[1], 19 / 3, "node 1 GPU A")
near(loads[2], 17 / 3, "node 1 GPU B")
near(loads[3], 6, "node 2 GPU A")
near(loads[4], 6, "node 2 GPU B")
near(M.imbalance(loads), 19 / 18, "hierarchical imbalance")

-- The global policy (groups not divisible by nodes: one group, one node), same loads on 4 GPUs: replicas
-- to 8/1, then 4/1 x3 (ties, the first): expert 1 (8/2 = 4 is the first of the 4s), expert 3, expert 4:
-- slots 8/3 x3, 1, 2 2, 2 2, 2, 2, 1, 2. Packing 12 slots, 3 each: 8/3 -> A, B, C; 2 -> D; 2 -> D (2 < 8/3);
-- 2 -> A, B, C (8/3 < 4 on D ... each then 14/3); 2 -> D (4 < 14/3; D full at 6); 2 -> A (20/3, full);
-- 1 -> B (17/3), 1 -> C (17/3). Busiest 20/3 over 6 = 10/9.
local g = M.rebalance(w, 3, 2, 4, 12)
near(M.imbalance(g), 10 / 9, "global imbalance")

-- The file reader: innermost lists, all-zero rows (dense layers) dropped.
local path = os.tmpname()
local f = assert(io.open(path, "w"))
f:write '{"logical_count": [[0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0, 4.5e1]]}'
f:close()
local rows = M.read(path)
os.remove(path)
assert(#rows == 1 and #rows[1] == 4 and rows[1][4] == 45, "one MoE row of four counts")
print("test_eplb_hierarchical: ok")
