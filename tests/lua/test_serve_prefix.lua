-- hl.serve prefix caching and sessions from Lua: the fields and groups, the result and step-log
-- fields, kv_aware routing keeping a conversation on its rank, and bad input naming the field.
local T = require "testlib"
local hl = require "hbdlab"

local base = { model = "llama-3.1-8b", cluster = hl.cluster { gpu = "H100-SXM", gpus = 1, hbd = 1 }, parallel = { tp = 1 } }
-- with(changes) or with(from, changes): a false change drops the field
local function with(a, b)
  if b == nil then a, b = base, a end
  return T.merged(a, b, false)
end

T.test("shared prefix: cached from the second request on", function()
  -- 2,100-token prompts whose first 2,000 are shared, 1 s apart (each ends before the next):
  -- every request after the first finds the 125 blocks of 16 tokens = 2,000 tokens
  local r = hl.serve(with { rate = 1, arrival = "constant", requests = 5, input = 2100, output = 4,
                            shared_prefix = 2000, prefix_cache = true, keep_steps = true })
  T.eq(r.prefill_tokens_saved, 4 * 2000, "tokens saved")
  T.near(r.prefix_hit_rate, 8000 / (5 * 2100), 1e-12, "hit rate")
  T.eq(r.step_log[1].saved_tokens, 0, "the first prompt finds nothing")
  T.ok(r.kv_cached_max > 0, "cached blocks reported")
  local off = hl.serve(with { rate = 1, arrival = "constant", requests = 5, input = 2100, output = 4,
                              shared_prefix = 2000 })
  T.eq(off.prefix_hit_rate, nil, "no hit rate without the cache")
  T.ok(r.ttft_s.mean < off.ttft_s.mean / 3, "TTFT falls with the cache")
end)

T.test("sessions: a turn's prompt holds the history, TTFT falls with the cache", function()
  local s = with { concurrency = 2, requests = 24, input = 400, output = 50, sessions = { turns = 6, think_s = 0.5 },
                   keep_requests = true }
  local off, on = hl.serve(s), hl.serve(with(s, { prefix_cache = true }))
  -- turn k of a conversation: k * 400 + (k - 1) * 50 prompt tokens; the longest is turn 6
  local longest = 0
  for _, q in ipairs(off.per_request) do longest = math.max(longest, q.input) end
  T.eq(longest, 6 * 400 + 5 * 50, "the sixth turn's prompt")
  T.ok(on.ttft_s.mean < off.ttft_s.mean, "TTFT with the cache below TTFT without")
  T.ok(on.prefix_hit_rate > 0.5, "most of a later turn is its history")
end)

T.test("sessions at a rate: conversations start at the rate, turns after the reply", function()
  -- constant arrivals 10 s apart start 3 conversations of 2 turns (6 requests); turn 2 arrives 1 s
  -- after turn 1's last token with prompt 200 + 10 + 200 = 410
  local r = hl.serve(with { rate = 0.1, arrival = "constant", requests = 6, input = 200, output = 10,
                            sessions = { turns = 2, think_s = 1 }, keep_requests = true, prefix_cache = true })
  local starts, seconds = {}, {}
  for _, q in ipairs(r.per_request) do
    if q.input == 200 then starts[#starts + 1] = q else seconds[#seconds + 1] = q end
  end
  T.eq(#starts, 3, "first turns")
  T.eq(#seconds, 3, "second turns")
  for i = 1, 3 do
    T.near(starts[i].arrival_s, 10 * (i - 1), 1e-12, "a conversation every 10 s")
    T.eq(seconds[i].input, 410, "the second turn's prompt")
    T.near(seconds[i].arrival_s, starts[i].finish_s + 1, 1e-12, "1 s after the reply")
  end
  -- turn 1's KV: 209 tokens, 13 full blocks of 16 = 208 tokens found by turn 2
  T.eq(r.prefill_tokens_saved, 3 * 208, "each second turn finds its first")
  T.ok(tostring(r):find("prefix cache: ", 1, true), "print() shows the prefix cache line")
end)

T.test("kv_aware keeps a conversation on the rank holding it", function()
  local s = { model = "llama-3.1-8b", cluster = hl.cluster { gpu = "H100-SXM", gpus = 2, hbd = 2 }, parallel = { tp = 1 },
              concurrency = 3, input = 300, output = 20, requests = 64, sessions = { turns = 8, think_s = 1 },
              prefix_cache = true }
  local rr = hl.serve(with(s, { router = "round_robin" }))
  local kv = hl.serve(with(s, { router = "kv_aware" }))
  T.ok(kv.prefix_hit_rate > rr.prefix_hit_rate + 0.05, "kv_aware finds more of the history")
end)

T.test("kv_offload: evicted prefixes come back from the host", function()
  -- 4 clients, conversations of 6 turns, a KV cache too small for all histories: with a host tier
  -- more of each history is found (in HBM or host) than without
  local s = with { concurrency = 4, requests = 48, input = 1500, output = 50, sessions = { turns = 6, think_s = 2 },
                   prefix_cache = true, kv_blocks = 1200 }
  local hbm = hl.serve(s)
  local tier = hl.serve(with(s, { kv_offload = { link = "pcie_gen5", capacity_bytes = 50e9, host_bytes = 2.56e11, overlap = false } }))
  T.ok(tier.prefill_tokens_saved > hbm.prefill_tokens_saved, "the tier adds hits")
  T.ok(tier.host_hit_tokens > 0 and tier.reload_s > 0 and tier.offloaded_blocks > 0, "host hits, reloads, offloads")
  T.eq(hbm.reload_s, nil, "no tier, no reload")
end)

T.test("serve_capacity with sessions: the rate starts conversations, named so; rps counts turns", function()
  -- 3 turns each: the searched rate is conversations/s, the offered turns/s 3 x that; the result's rps
  -- (requests = turns over the run) is that within the run's ends (5%); each probe offers min_duration
  -- = 100 s of conversations, 3 x rate x 100 requests (it was rate x 100: a third of the time)
  local c = hl.serve_capacity(with { input = 300, output = 20, sessions = { turns = 3, think_s = 0.5 },
                                     slo = { ttft_ms = 200, tpot_ms = 30 }, tolerance = 0.2, min_duration = 100,
                                     max_requests = 20000 })
  T.eq(c.rate_unit, "conversations/s", "the unit")
  T.eq(c.conversations_per_s, c.rate, "conversations/s")
  T.eq(c.turns_per_s, 3 * c.rate, "turns/s")
  T.near(c.result.rps, c.turns_per_s, 0.05, "the run's requests/s are turns/s")
  T.eq(c.result.requests, math.ceil(c.rate * 3 * 100), "min_duration of conversations")
  T.ok(tostring(c):find("conversations/s (" .. string.format("%.4g", c.turns_per_s) .. " turns/s offered, 3 turns each)", 1, true),
    "printed: " .. tostring(c):sub(1, 120))
  local p = hl.serve_capacity(with { input = 300, output = 20, slo = { ttft_ms = 200 }, tolerance = 0.3, min_duration = 1,
                                     max_requests = 5000 })
  T.eq(p.rate_unit, "requests/s", "without sessions")
  T.eq(p.turns_per_s, nil, "no turns")
end)

T.test("bad input names the field", function()
  T.raises(function() hl.serve(with { rate = 1, sessions = { turn = 3 } }) end, "turns")
  T.raises(function() hl.serve(with { rate = 1, sessions = { think_s = 3 } }) end, "sessions.turns")
  T.raises(function() hl.serve(with { rate = 1, sessions = 3 }) end, "sessions")
  T.raises(function() hl.serve(with { rate = 1, prefix_cache = 1 }) end, "prefix_cache")
  T.raises(function() hl.serve(with { rate = 1, shared_prefix = -5 }) end, "shared_prefix")
  T.raises(function() hl.serve(with { rate = 1, prefix_cache = true, mode = "analytical" }) end, "prefix_cache")
  T.raises(function() hl.serve(with { rate = 1, kv_offload = { capacity_bytes = 1e9, link = "pcie_gen5" } }) end,
           "kv_offload", "prefix_cache")
  T.raises(function() hl.serve(with { rate = 1, prefix_cache = true, kv_offload = { link = "gh200", capacity_bytes = 500e9 } }) end,
           "kv_offload.capacity_bytes", "more than the host memory", "4.8e+11")
  T.raises(function() hl.serve(with { rate = 1, prefix_cache = true, kv_offload = { capacity_bytes = 1e9 } }) end,
           "kv_offload.bw")
  T.raises(function() hl.serve(with { rate = 1, prefix_cache = true, kv_offload = { capacity_bytes = 1e9, bw = 1e10, link = "pcie_gen4" } }) end,
           "both give")
  T.raises(function() hl.serve(with { rate = 1, prefix_cache = true, kv_offload = { link = "pcie_gen6", capacity_bytes = 1 } }) end,
           "kv_offload.link")
  T.raises(function() hl.serve(with { rate = 1, prefix_cache = true, kv_offload = { capacty_bytes = 1 } }) end,
           "capacity_bytes")
  -- a link with no host memory of its own (PCIe, custom): host_bytes bounds the tier, so it is required
  T.raises(function() hl.serve(with { rate = 1, prefix_cache = true, kv_offload = { capacity_bytes = 1e9, link = "pcie_gen5" } }) end,
           "serve field 'kv_offload.host_bytes' is required with link = \"pcie_gen5\"")
  T.raises(function() hl.serve(with { rate = 1, prefix_cache = true, kv_offload = { capacity_bytes = 1e15, bw = 1e10 } }) end,
           "serve field 'kv_offload.host_bytes' is required with link = \"custom\"")
  T.raises(function() hl.serve(with { rate = 1, prefix_cache = true,
                                      kv_offload = { capacity_bytes = 3e11, bw = 1e10, host_bytes = 2.56e11 } }) end,
           "more than the host memory")
  -- a tier smaller than one block held nothing, silently. Llama-3.1-8B BF16 on one GPU: 32 layers x 8 KV
  -- heads x 128 x 2 (K, V) x 2 B = 131,072 B a token, x 16 tokens = 2,097,152 B a block
  T.raises(function() hl.serve(with { rate = 1, prefix_cache = true, requests = 4,
                                      kv_offload = { capacity_bytes = 2097151, link = "gh200" } }) end,
           "serve field 'kv_offload.capacity_bytes': 2.09715e+06 B per GPU holds no KV block",
           "a block of 16 tokens is 2.09715e+06 B")
  local one = hl.serve(with { rate = 1, prefix_cache = true, requests = 4, kv_offload = { capacity_bytes = 2097152, link = "gh200" } })
  T.ok(one.reload_s ~= nil, "one block's worth runs")
  -- a conversation outgrowing a rank's KV cache
  T.raises(function() hl.serve(with { concurrency = 1, requests = 4, input = 3000, output = 10, kv_blocks = 500,
                                      sessions = { turns = 4 } }) end, "sessions")
end)

T.done()
