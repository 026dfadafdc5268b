-- The busiest GPU of SGLang's EPLB placement, layer by layer, from an expert-count statistics file (issue 27,
-- P6; docs/VALIDATION.md fid12). SGLang's prefill in the LMSYS large-scale EP blog (branch deepseek_ep, read at
-- fzyzcjy/sglang 6fa2c029c, 2025-05-04) places DeepSeek-V3's experts with DeepSeek's EPLB
-- (python/sglang/srt/managers/deepseek_eplb.py, copied from github.com/deepseek-ai/EPLB eplb.py):
-- `rebalance_experts` takes the hierarchical policy when the expert groups divide among the nodes
-- (num_groups % num_nodes == 0; expert_location.py passes num_groups = n_group = 8 and num_nodes =
-- --nnodes = 4 for P6's EP32), else the global one (one group, one node):
--   1. `balanced_packing` of the groups' loads onto the nodes, num_groups / num_nodes groups each: groups
--      in decreasing load, each to the least-loaded node that still has room (the first on ties);
--   2. per node, `replicate_experts` of its experts to num_physical / num_nodes slots: each extra slot to
--      the expert with the largest load / copies (the first on ties), each copy carrying load / copies;
--   3. per node, `balanced_packing` of its slots onto its num_gpus / num_nodes GPUs, slots / GPUs each.
-- A GPU's load is the sum of its slots'; a layer's imbalance is its busiest GPU over the mean. Tokens spread
-- evenly over an expert's copies (each copy load / copies, as eplb.py assumes). The statistics are the
-- `logical_count` files SGLang's reproduction instructions attach (sgl-project/sglang#6017,
-- attachment_ep_statistics.zip: prefill_in1024.json, prefill_in2048.json, prefill_in4096.json; a stored copy:
-- github.com/GeneratedRandomly/SGLang-reproduce attachment_ep_statistics/), one row of expert counts per
-- layer; all-zero rows (DeepSeek-V3's 3 dense layers) are skipped. Every MoE layer's expert time and its
-- busiest receiver scale with its own imbalance, so over the layers the mean imbalance is the one factor
-- that gives the same sum (hl.simulate's `imbalance`, docs/MODEL.md 6).
-- Usage: hbdlab tools/eplb_hierarchical.lua --set file=prefill_in4096.json [--set groups=8 --set nodes=4
--        --set gpus=32 --set slots=288] [--set shares=OUT]
-- As a module (tests/lua/test_eplb_hierarchical.lua): dofile returns { rebalance = f, imbalance = f, read = f }.
local hl = require "hbdlab"
local P = hl.params {
  file = { "", "logical_count statistics file (JSON); empty: load as a module, print nothing" },
  groups = { 8, "expert groups (DeepSeek-V3 n_group)" },
  nodes = { 4, "nodes (--nnodes)" },
  gpus = { 32, "GPUs (the EP size)" },
  slots = { 288, "physical expert slots (256 + --ep-num-redundant-experts)" },
  shares = { "", "also write the experts' routing shares averaged over the MoE layers to this file, one a line "
                 .. "(hl.simulate's expert_freq)" },
}

-- indices of w by decreasing weight, ties by index (eplb.py sorts with torch; its order on ties is unspecified)
local function by_weight(w)
  local idx = {}
  for i = 1, #w do idx[i] = i end
  table.sort(idx, function(a, b) if w[a] ~= w[b] then return w[a] > w[b] end return a < b end)
  return idx
end

-- eplb.py balanced_packing for one layer: pack[i] (1-based) of each item, and the packs' loads
local function balanced_packing(w, npacks)
  local per = #w // npacks
  local load, count, pack = {}, {}, {}
  for p = 1, npacks do load[p], count[p] = 0, 0 end
  for _, i in ipairs(by_weight(w)) do
    local best
    for p = 1, npacks do
      if count[p] < per and (not best or load[p] < load[best]) then best = p end
    end
    pack[i], load[best], count[best] = best, load[best] + w[i], count[best] + 1
  end
  return pack, load
end

-- eplb.py replicate_experts for one layer: the load of each of nphy slots
local function replicate(w, nphy)
  local copies = {}
  for e = 1, #w do copies[e] = 1 end
  for _ = #w + 1, nphy do
    local best = 1
    for e = 2, #w do if w[e] / copies[e] > w[best] / copies[best] then best = e end end
    copies[best] = copies[best] + 1
  end
  local slots = {}
  for e = 1, #w do for _ = 1, copies[e] do slots[#slots + 1] = w[e] / copies[e] end end
  return slots
end

-- rebalance_experts for one layer's expert loads w: the GPUs' loads (node by node)
local function rebalance(w, groups, nodes, gpus, nphy)
  if groups % nodes ~= 0 then groups, nodes = 1, 1 end -- the global policy
  local gsize = #w // groups
  local gload = {}
  for g = 1, groups do
    local s = 0
    for e = (g - 1) * gsize + 1, g * gsize do s = s + w[e] end
    gload[g] = s
  end
  local node_of = balanced_packing(gload, nodes)
  local out = {}
  for n = 1, nodes do
    local mine = {} -- the node's experts, its groups in the order eplb.py gives them (rank in pack)
    for _, g in ipairs(by_weight(gload)) do
      if node_of[g] == n then
        for e = (g - 1) * gsize + 1, g * gsize do mine[#mine + 1] = w[e] end
      end
    end
    local _, loads = balanced_packing(replicate(mine, nphy // nodes), gpus // nodes)
    for _, l in ipairs(loads) do out[#out + 1] = l end
  end
  return out
end

local function imbalance(loads)
  local sum, max = 0, 0
  for _, l in ipairs(loads) do sum, max = sum + l, math.max(max, l) end
  return max / (sum / #loads)
end

-- the layers' rows of a logical_count file (innermost [...] lists), all-zero rows dropped
local function read(path)
  local f = assert(io.open(path, "r"))
  local text = f:read "a"
  f:close()
  local rows = {}
  for inner in text:gmatch "%[([^%[%]]*)%]" do
    local row, sum = {}, 0
    for x in inner:gmatch "[^,%s]+" do
      row[#row + 1] = assert(tonumber(x), "not a number: " .. x); sum = sum + row[#row]
    end
    if sum > 0 then rows[#rows + 1] = row end
  end
  return rows
end

local M = { rebalance = rebalance, imbalance = imbalance, read = read }
if P.file ~= "" then
  local rows = read(P.file)
  local sum, lo, hi = 0, math.huge, 0
  for _, w in ipairs(rows) do
    local x = imbalance(rebalance(w, P.groups, P.nodes, P.gpus, P.slots))
    sum, lo, hi = sum + x, math.min(lo, x), math.max(hi, x)
  end
  print(string.format("%s: %d MoE layers, %d experts, %s policy (%d groups, %d nodes, %d GPUs, %d slots): busiest GPU "
                      .. "/ mean per layer: mean %.4f, min %.4f, max %.4f", P.file, #rows, #rows[1],
                      P.groups % P.nodes == 0 and "hierarchical" or "global", P.groups, P.nodes, P.gpus, P.slots,
                      sum / #rows, lo, hi))
  M.mean = sum / #rows
  if P.shares ~= "" then -- each layer's counts as shares, averaged over the layers
    local avg = {}
    for e = 1, #rows[1] do avg[e] = 0 end
    for _, w in ipairs(rows) do
      local s = 0
      for e = 1, #w do s = s + w[e] end
      for e = 1, #w do avg[e] = avg[e] + w[e] / s / #rows end
    end
    local out = assert(io.open(P.shares, "w"))
    out:write(string.format("# routing shares of the %d experts, each layer's logical_count as shares averaged over its %d "
                            .. "MoE layers\n# from %s (tools/eplb_hierarchical.lua)\n", #avg, #rows,
                            P.file:match "[^/]*$"))
    for e = 1, #avg do out:write(string.format("%.12g\n", avg[e])) end
    out:close()
    print(string.format("wrote %d layer-averaged shares to %s", #avg, P.shares))
  end
end
return M
