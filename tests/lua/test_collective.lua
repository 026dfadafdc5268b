local T = require "testlib"
local hl = require "hbdlab"

local clu = hl.cluster { gpu = "H100-SXM", gpus = 64, hbd = 8 }

T.test("collective result fields", function()
  local r = hl.collective { op = "allreduce", bytes = 1e9, ranks = 16, cluster = clu, algo = "auto" }
  for _, k in ipairs { "time_s", "algo", "algbw", "busbw", "scaleup_bytes", "scaleout_bytes", "latency_share" } do
    T.ok(r[k] ~= nil, k)
  end
  T.eq(r.hbds, 2, "packed into 2 HBDs")
  T.near(r.algbw, 1e9 / r.time_s, 1e-12, "algbw = S/t")
end)

T.test("auto is the fastest algorithm", function()
  for _, op in ipairs { "allreduce", "allgather", "reducescatter", "alltoall", "broadcast" } do
    local best = hl.collective { op = op, bytes = 4e6, ranks = 32, cluster = clu }
    for _, a in ipairs { "ring", "tree", "direct", "halving_doubling", "hierarchical" } do
      local ok, r = pcall(hl.collective, { op = op, bytes = 4e6, ranks = 32, cluster = clu, algo = a })
      if ok then T.ok(best.time_s <= r.time_s * (1 + 1e-12), op .. " auto <= " .. a) end
    end
  end
end)

T.test("placement: spreading a group over more HBDs moves bytes to scale-out", function()
  local packed = hl.collective { op = "alltoall", bytes = 1e8, ranks = 8, cluster = clu, algo = "direct" }
  local spread = hl.collective { op = "alltoall", bytes = 1e8, ranks = 8, cluster = clu, algo = "direct", placement = 2 }
  T.eq(packed.scaleout_bytes, 0, "one HBD")
  T.ok(spread.scaleout_bytes > 0 and spread.time_s > packed.time_s, "spread is slower")
end)

T.test("payload precision", function()
  local a = hl.collective { op = "alltoall", elements = 1e6, precision = "fp8", ranks = 8, cluster = clu }
  T.eq(a.bytes, 1e6, "fp8 = 1 byte")
end)

T.test("MoE dispatch and combine", function()
  -- 4096 tokens per rank, top-8, hidden 7168: dispatch at FP8 = 4096*8*7168 B; combine at BF16 twice that
  local d = hl.collective { op = "dispatch", tokens = 4096, topk = 8, hidden = 7168, ranks = 64, cluster = clu }
  local c = hl.collective { op = "combine", tokens = 4096, topk = 8, hidden = 7168, ranks = 64, cluster = clu }
  T.eq(d.op, "alltoall", "an all-to-all")
  T.eq(d.bytes, 4096 * 8 * 7168, "dispatch bytes")
  T.eq(c.bytes, 2 * d.bytes, "combine bytes")
  local hot = hl.collective { op = "dispatch", tokens = 4096, topk = 8, hidden = 7168, ranks = 64, cluster = clu,
                              imbalance = 1.5, algo = "direct" }
  local even = hl.collective { op = "dispatch", tokens = 4096, topk = 8, hidden = 7168, ranks = 64, cluster = clu, algo = "direct" }
  T.ok(hot.time_s > even.time_s, "a hot expert slows the exchange")
  T.raises(function() hl.collective { op = "dispatch", tokens = 1, ranks = 8, cluster = clu } end, "field 'hidden' is required")
end)

T.test("errors", function()
  T.raises(function() hl.collective { op = "allreduse", bytes = 1, ranks = 8, cluster = clu } end,
    "'allreduse' is not one of")
  T.raises(function() hl.collective { op = "allreduce", bytes = 1, ranks = 8, cluster = clu, algo = "magic" } end,
    "'magic' is not one of")
  T.raises(function() hl.collective { op = "allreduce", ranks = 8, cluster = clu } end, "'bytes' is required")
end)

T.done()
