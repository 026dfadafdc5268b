-- nccl-tests-style curves from the collective model: bus bandwidth vs message
-- size (8 B to 8 GB) for every algorithm, inside one HBD and across HBDs; and
-- AllReduce / All-to-All time vs HBD size for a fixed group of 64 ranks.
local P = hl.params {
  gpu = { "H100-SXM", "GPU preset" },
  ranks = { 16, "ranks of the bus-bandwidth curves" },
  out = { "plots/out/collectives", "output prefix" },
}
local algos = { "ring", "tree", "direct", "halving_doubling", "in_switch", "hierarchical" }
local sizes = {}
local s = 8
while s <= 8.6e9 do sizes[#sizes + 1] = s; s = s * 4 end -- 8 B .. 8 GiB

local function curves(op, cluster, label)
  local rows = {}
  for _, algo in ipairs(algos) do
    for _, bytes in ipairs(sizes) do
      local ok, r = pcall(hl.collective, { op = op, bytes = bytes, ranks = P.ranks, cluster = cluster, algo = algo })
      if ok then rows[#rows + 1] = { algo = algo, bytes = bytes, busbw_gbs = r.busbw / 1e9, time_us = r.time_s * 1e6 } end
    end
  end
  hl.plot.line { data = rows, x = "bytes", y = "busbw_gbs", by = "algo", logx = 10, xformat = "%.0s%cB", ymin = 0,
    title = string.format("%s, %d ranks, %s", op, P.ranks, label), xlabel = "message size (bytes)",
    ylabel = "bus bandwidth (GB/s)", out = string.format("%s_%s_%s.png", P.out, op, label:gsub("%W+", "_")) }
  return rows
end

local inside = hl.cluster { gpu = P.gpu, gpus = P.ranks, hbd = P.ranks }
local across = hl.cluster { gpu = P.gpu, gpus = P.ranks, hbd = 8 }
for _, op in ipairs { "allreduce", "allgather", "alltoall" } do
  curves(op, inside, "one HBD")
  local rows = curves(op, across, "HBDs of 8")
  if op == "allreduce" then
    print(string.format("AllReduce over %d ranks in HBDs of 8 (busbw GB/s):", P.ranks))
    local big = hl.rows.filter(rows, function(r) return r.bytes >= 2^30 end)
    hl.rows.print(hl.rows.sort(big, "-busbw_gbs"), { "algo", "bytes", "busbw_gbs", "time_us" })
  end
end

-- Time vs HBD size for a fixed group of 64 ranks (1 GB AllReduce, 256 MB All-to-All).
local rows = {}
for _, hbd in ipairs { 8, 16, 32, 64 } do
  local c = hl.cluster { gpu = P.gpu, gpus = 64, hbd = hbd }
  for _, case in ipairs { { "allreduce", 1e9 }, { "alltoall", 256e6 } } do
    local r = hl.collective { op = case[1], bytes = case[2], ranks = 64, cluster = c }
    rows[#rows + 1] = { op = case[1], hbd = hbd, time_ms = r.time_s * 1e3, algo = r.algo,
                        scaleout_mb = r.scaleout_bytes / 1e6 }
  end
end
print("\n64 ranks vs HBD size (AllReduce 1 GB, All-to-All 256 MB):")
hl.rows.print(rows, { "op", "hbd", "algo", "time_ms", "scaleout_mb" })
hl.plot.line { data = rows, x = "hbd", y = "time_ms", by = "op", logx = 2, xtics = { 8, 16, 32, 64 },
  title = "64-rank collectives vs HBD size (" .. P.gpu .. ")", xlabel = "HBD size (GPUs)", ylabel = "time (ms)",
  out = P.out .. "_vs_hbd.png" }
print("figures: " .. P.out .. "_*.png")
