-- Two-batch overlap and shared HBM (issue 27, P6/P7/P8; docs/VALIDATION.md, fidep10): while DeepEP's
-- kernels run beside a compute stage, both read and write the same HBM, so a pair of them lasts at
-- least (compute bytes + communication bytes) / (eff_mem x HBM bandwidth), whatever their SM split.
-- This prints, for the validation jobs, each stage's time and HBM bytes from the model's breakdown,
-- the communication's HBM bytes, and that bound against the four pairs (prefill) or the stages the
-- decode order hides its transfers under, to show whether the bound binds anywhere.
-- Communication HBM bytes per GPU (derived from DeepEP's data path, deep_ep csrc/kernels/legacy
-- internode.cu and internode_ll.cu; symmetric traffic, so each GPU sends and receives as much):
--   normal (hierarchical) kernels: per scale-out byte, the sender reads the token (1), writes DeepEP's
--   RDMA send buffer (1), the NIC reads it (1); the receiving node's NIC writes the RDMA receive
--   buffer (1) and the forwarder reads it (1): 5 touches. Per scale-up byte the forwarder's write
--   lands in the peer's buffer (1), the NVLink receiver reads it (1) and writes the output (1): 3.
--   low-latency (flat) kernels: the sender reads the token (1) and writes the send buffer (1), the NIC
--   reads it (1); the NIC writes the receive buffer (1), the receive hook reads it (1) and writes the
--   packed tensor (1): 6 per byte.
-- These count every copy as an HBM round trip (no L2 hits), so they overstate the communication's
-- share: if the bound does not bind with them, it does not bind.
-- The breakdown's rows also hold DeepSeek-V3's 3 leading dense layers, which run outside the overlap
-- (MODEL.md 6.5): counting them into c1 overstates the compute stages too, on the same side.
-- Usage: hbdlab tools/tbo_hbm_share.lua
local hl = require "hbdlab"
local ds = hl.model "deepseek-v3"
local gpu = hl.gpu "H100-SXM"
local bw = gpu.hbm_bw * gpu.eff_mem -- B/s a memory-bound kernel reaches (the preset's eff_mem)

-- The breakdown's rows by two-batch-overlap stage (core/src/layer.c sets a->stage; sim.c adds the
-- attention kernel to the prep stage in prefill and to core in decode).
local prep = { norms = 1, q_proj = 1, kv_proj = 1, rope = 1, kv_append = 1, k_concat = 1, activation = 1, norm = 1 }
local core = { o_proj = 1, ffn_up_gate = 1, ffn_down = 1, router = 1 }
local function stage_of(name, decode)
  if name == "attention" or name == "decode_attention" then return decode and "core" or "prep" end
  if name == "mla_absorb" then return "absorb" end -- decode: one of its two GEMMs per stage
  if prep[name] then return "prep" end
  if core[name] then return "core" end
  if name:match "^ep_dispatch" then return "x1" end
  if name:match "^ep_combine" or name == "moe_allgather" then return "x2" end
  if name == "experts" or name == "moe_permute" then return "experts" end
  if name == "shared_experts" then return "shared" end
  return "outside" -- embedding, LM head: outside the layers
end

local function sums(rows, decode, touches)
  local t, b = {}, {}
  for _, r in ipairs(rows) do
    local st = stage_of(r.name, decode)
    local bytes = r.bytes
    if st == "x1" or st == "x2" then
      bytes = r.bytes * (touches[r.name:match "_inter$" and "inter" or r.name:match "_intra$" and "intra" or "flat"] or 0)
    end
    t[st] = (t[st] or 0) + r.time_s
    b[st] = (b[st] or 0) + bytes
  end
  if t.absorb then -- half to each of prep and core
    for _, st in ipairs { "prep", "core" } do
      t[st] = (t[st] or 0) + t.absorb / 2
      b[st] = (b[st] or 0) + b.absorb / 2
    end
  end
  return t, b
end

local function cluster(n) return hl.cluster { gpu = "H100-SXM", gpus = n, hbd = 8 } end

local function prefill(inp)
  local r = hl.simulate { model = ds, cluster = cluster(32), precision = "fp8", kv_precision = "bf16", framework = "sglang",
                          batch = 16384 // inp * 32, input = inp, output = 1, parallel = { tp = 1, ep = 32 },
                          dispatch = "hierarchical", wire_precision = "fp8", two_batch_overlap = true }
  local t, b = sums(r.prefill.breakdown, false, { inter = 5, intra = 3 })
  local c1, c2 = (t.prep or 0) + (t.core or 0) + (t.shared or 0), t.experts
  local bc1, bc2 = (b.prep or 0) + (b.core or 0) + (b.shared or 0), b.experts
  print(string.format("P6/P8 input %d: ttft %.4f s (tok/s/node %.0f)", inp, r.ttft_s, 16384 * 8 / r.ttft_s))
  print(string.format("  stage sums (both halves, all layers): c1 %.4f s %.1f GB, c2 %.4f s %.1f GB, x1 %.4f s %.1f GB, x2 %.4f s %.1f GB",
                      c1, bc1 / 1e9, c2, bc2 / 1e9, t.x1, b.x1 / 1e9, t.x2, b.x2 / 1e9))
  print(string.format("  HBM demand: c1 %.2f, c2 %.2f, x1 %.2f, x2 %.2f TB/s (eff_mem x peak %.2f TB/s)",
                      bc1 / c1 / 1e12, bc2 / c2 / 1e12, b.x1 / t.x1 / 1e12, b.x2 / t.x2 / 1e12, bw / 1e12))
  -- pairs (halves): C1|X2, C1|X1, C2|X1, C2|X2; the model's pair is at least max(c, x)
  local pairs = { { "C1|X2", c1, bc1, t.x2, b.x2 }, { "C1|X1", c1, bc1, t.x1, b.x1 },
                  { "C2|X1", c2, bc2, t.x1, b.x1 }, { "C2|X2", c2, bc2, t.x2, b.x2 } }
  for _, p in ipairs(pairs) do
    local lo = math.max(p[2], p[4]) / 2
    local hbm = (p[3] + p[5]) / 2 / bw
    print(string.format("  %s: max(c, x) %.4f s, HBM bound %.4f s (%.0f%% of it)%s", p[1], lo, hbm, 100 * hbm / lo,
                        hbm > lo and "  BINDS" or ""))
  end
end

local function decode()
  local r = hl.simulate { model = ds, cluster = cluster(72), precision = "fp8", kv_precision = "bf16", framework = "sglang",
                          batch = 256 * 72, input = 2000, output = 2, parallel = { tp = 1, ep = 72 }, redundant_experts = 32,
                          dispatch = "flat", wire_precision = "fp8", two_batch_overlap = true }
  local t, b = sums(r.decode.breakdown, true, { flat = 6, inter = 6, intra = 6 })
  print(string.format("P7 decode: tpot %.5f s (tok/s/node %.0f)", r.tpot_s, 8 * 256 / r.tpot_s))
  for _, st in ipairs { "prep", "core", "shared", "experts", "x1", "x2" } do
    print(string.format("  %-7s %.5f s %.3f GB (%.2f TB/s)", st, t[st] or 0, (b[st] or 0) / 1e9,
                        (b[st] or 0) / math.max(t[st] or 0, 1e-30) / 1e12))
  end
  -- the decode order hides min(X1, SHARED + PREP) + min(X2, CORE); the windows' kernels are
  -- memory-bound, so the transfer's own HBM bytes stretch the window by at most bytes / bw
  local w1, w2 = (t.shared or 0) + (t.prep or 0), t.core or 0
  local bw1, bw2 = (b.shared or 0) + (b.prep or 0), b.core or 0
  for _, p in ipairs { { "X1 under SHARED+PREP", w1, bw1, t.x1, b.x1 }, { "X2 under CORE", w2, bw2, t.x2, b.x2 } } do
    local lo = math.max(p[2], math.min(p[2], p[4]))
    local hbm = (p[3] + p[5]) / bw
    print(string.format("  %s: window %.5f s, transfer %.5f s, HBM bound on the window %.5f s (+%.5f s over the window)",
                        p[1], p[2], p[4], hbm, math.max(0, hbm - lo)))
  end
end

for _, inp in ipairs { 1024, 2048, 4096 } do prefill(inp) end
decode()
