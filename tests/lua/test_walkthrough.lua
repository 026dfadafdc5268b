-- scripts/walkthrough_tp2pp2.lua prints the simulator's own collective sizes,
-- counts and times (the collective rows of r.prefill/decode.breakdown), and
-- computes none itself.
local T = require "testlib"

local src = (os.getenv("HBDLAB_SOURCE_DIR") or ".") .. "/scripts/walkthrough_tp2pp2.lua"
local si = require("hbdlab.objects").si

-- Runs the walkthrough with its default parameters; returns its printed lines and its result.
local function run()
  local lines, saved_print, saved_arg = {}, print, _G.arg
  _G.print = function(...)
    local parts = table.pack(...)
    for i = 1, parts.n do parts[i] = tostring(parts[i]) end
    for l in (table.concat(parts, "\t") .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  end
  _G.arg = { [0] = src }
  local ok, r = pcall(dofile, src)
  _G.print, _G.arg = saved_print, saved_arg
  if not ok then error(r, 0) end
  return lines, r
end

local lines, r = run()

local function line(prefix)
  for _, l in ipairs(lines) do
    if l:sub(1, #prefix) == prefix then return l end
  end
  error("walkthrough printed no line starting with " .. prefix)
end
local function row(phase, name)
  for _, it in ipairs(r[phase].breakdown) do
    if it.name == name then return it end
  end
  error("no row " .. name)
end
-- the line's columns after the step text: op, ranks, HBDs, bytes/call (2 words), time/call (2 words), count
local function cols(l)
  local op, ranks, hbds, b, bu, t, tu, n = l:sub(67):match("^%s*(%S+)%s+(%d+)%s+(%d+)%s+(%S+) (%S+)%s+(%S+) (%S+)%s+(%S+)%s*$")
  T.ok(op, "columns of: " .. l)
  return { op = op, ranks = tonumber(ranks), hbds = tonumber(hbds), bytes = b .. " " .. bu, time = t .. " " .. tu,
           count = tonumber(n) }
end

T.test("the walkthrough runs and prints each collective as the simulator counted it", function()
  local steps = r.output - 1
  local cases = {
    { "2. TP AllReduce", "prefill", "tp_allreduce", 1 },
    { "3. PP Send/Recv", "prefill", "pp_sendrecv", 1 },
    { "5. logits AllGather", "prefill", "logits_allgather", 1 },
    { "6. sampled token ids", "prefill", "token_broadcast", 1 },
    { "7. decode step (1 token/seq): TP AllReduce", "decode", "tp_allreduce", steps },
    { "   decode step: PP Send/Recv", "decode", "pp_sendrecv", steps },
    { "   decode step: logits AllGather", "decode", "logits_allgather", steps },
    { "   decode step: sampled token ids", "decode", "token_broadcast", steps },
  }
  for _, c in ipairs(cases) do
    local got, it = cols(line(c[1])), row(c[2], c[3])
    T.eq(got.op, it.op, c[1] .. " op")
    T.eq(got.ranks, it.ranks, c[1] .. " ranks")
    T.eq(got.hbds, it.hbds, c[1] .. " HBDs")
    T.eq(got.bytes, si(it.call_bytes, "B"), c[1] .. " bytes")
    T.eq(got.time, string.format("%.3f ms", it.call_time_s * 1e3), c[1] .. " time")
    T.near(got.count, it.calls / c[4], 1e-5, c[1] .. " count")
  end
end)

-- By hand (Llama-3.1-8B: h 4096, 32 layers, vocab 128256; BF16 a = 2 B; batch 8, prompt 2048):
-- pp = 2 keeps m = 2 micro-batches of 4 sequences in flight (MODEL.md 6, "Pipeline"); prefill TP
-- AllReduce S = 4 * 2048 * 4096 * 2 = 67,108,864 B = 67.11 MB, 2 per layer x 16 stage layers x 2
-- micro-batches = 64 calls; decode TP AllReduce S = 4 * 4096 * 2 = 32,768 B = 32.77 kB, 2 x 16 layers
-- x max(m, pp) = 2 stage slots = 64 per step; logits AllGather S = 8 * 128256 * 2 = 2,052,096 B = 2.052 MB; token ids 8 * 4 = 32 B to
-- tp * pp = 4 ranks over 2 HBDs.
T.test("the printed sizes are the hand-worked ones", function()
  local tp = cols(line("2. TP AllReduce"))
  T.eq(tp.bytes, "67.11 MB", "prefill TP AllReduce bytes")
  T.eq(tp.count, 64, "prefill TP AllReduce calls")
  T.eq(tp.hbds, 1, "TP stays inside an HBD")
  local dec = cols(line("7. decode step (1 token/seq): TP AllReduce"))
  T.eq(dec.bytes, "32.77 kB", "decode TP AllReduce bytes")
  T.eq(dec.count, 64, "decode TP AllReduce calls per step")
  T.eq(cols(line("5. logits AllGather")).bytes, "2.052 MB", "logits")
  local tb = cols(line("6. sampled token ids"))
  T.eq(tb.bytes, "32 B", "token ids")
  T.eq(tb.ranks, 4, "token ids to every GPU")
  T.eq(tb.hbds, 2, "over both servers")
  T.eq(cols(line("3. PP Send/Recv")).hbds, 2, "PP crosses the network")
end)

T.test("the requirements table is fed from the simulator's rows", function()
  local tp = row("prefill", "tp_allreduce")
  local l = line("TP prefill (AllReduce, per stage)")
  T.ok(l:find(si(tp.call_bytes, "B"), 1, true), "bytes each: " .. l)
  T.ok(l:find("scale-up", 1, true) and l:find(" 64 ", 1, true), "tier and count: " .. l)
  T.ok(line("EP (All-to-All, mixtral-8x7b EP4 prefill)  scale-out"), "EP scale-out row")
end)

T.test("the script holds no byte formula of its own", function()
  local f = assert(io.open(src, "rb"))
  local text = f:read("a")
  f:close()
  for _, field in ipairs { "%.hidden", "%.vocab", "%.topk", "hl%.collective", "coll_launch", "scaleup_latency" } do
    T.ok(not text:find(field), "the walkthrough reads " .. field .. " (a size or latency computed in Lua)")
  end
end)

T.test("walkthrough options are checked by name", function()
  local job = { model = "llama-3.1-8b", cluster = { gpu = "H100-SXM", gpus = 8, hbd = 8 }, batch = 8, input = 128,
                output = 8, parallel = { tp = 8 } }
  T.raises(function() hl.walkthrough(job, nil, { share = 0 / 0 }) end, "'share'", "nan", "(0, 1)")
  T.raises(function() hl.walkthrough(job, nil, { share = -1 }) end, "'share'", "-1")
  T.raises(function() hl.walkthrough(job, nil, { share = "x" }) end, "'share'", "x")
  T.raises(function() hl.walkthrough(job, nil, { shar = 0.2 }) end, "unknown field 'shar'")
  T.raises(function() hl.walkthrough(job, nil, "x") end, "opts must be a table")
end)

T.done()
