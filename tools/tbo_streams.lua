-- Two-batch overlap in prefill as SGLang orders it (docs/MODEL.md 6.5), simulated on two in-order
-- streams, against the four-pair formula hl_sim_run uses. Per layer and micro-batch: compute C1
-- (attention side) then C2 (experts) on the compute stream, dispatch X1 then combine X2 on DeepEP's
-- stream. SGLang's prefill strategy (operations_strategy.py, two yields per layer, B one stage
-- behind A with tbo_delta_stages = 0; token_dispatcher/deepep.py: dispatch_b / combine_b start the
-- transfer after the event captured when the compute was submitted and make the compute stream wait
-- for it) gives the launch order
--   compute: C1a C1b | wait X1a, C2a | wait X1b, C2b | wait X2a, C1a' | wait X2b, C1b' ...
--   comm:    X1a (after C1a) X1b (after C1b) X2a (after C2a) X2b (after C2b) X1a' ...
-- The stage sums are a phase's (both micro-batches, all MoE layers), as hl_sim_run keeps them.
-- Example (P6 of docs/VALIDATION.md at 1K input, f = 0):
--   hbdlab tools/tbo_streams.lua --set c1=0.573672 --set x1=0.546452 --set c2=0.657457 --set x2=1.08986
local hl = require "hbdlab"
local P = hl.params {
  c1 = { 0.573672, "s of attention-side compute in the phase (both micro-batches)" },
  x1 = { 0.546452, "s of dispatch in the phase" },
  c2 = { 0.657457, "s of expert compute in the phase" },
  x2 = { 1.08986, "s of combine in the phase" },
  layers = { 58, "MoE layers" },
}
local L = P.layers
local a, d, e, cb = P.c1 / 2 / L, P.x1 / 2 / L, P.c2 / 2 / L, P.x2 / 2 / L -- one micro-batch, one layer
local tc, tx = 0, 0 -- when each stream is free
tc = tc + a; local eA1 = tc
tc = tc + a; local eB1 = tc
for l = 1, L do
  tx = math.max(tx, eA1) + d; local X1a = tx
  tx = math.max(tx, eB1) + d; local X1b = tx
  tc = math.max(tc, X1a) + e; local eA2 = tc
  tc = math.max(tc, X1b) + e; local eB2 = tc
  tx = math.max(tx, eA2) + cb; local X2a = tx
  tx = math.max(tx, eB2) + cb; local X2b = tx
  local next = l < L and a or 0 -- the next layer's attention side
  tc = math.max(tc, X2a) + next; eA1 = tc
  tc = math.max(tc, X2b) + next; eB1 = tc
end
local streams = math.max(tc, tx)
local h = { P.c1 / 2, P.x1 / 2, P.c2 / 2, P.x2 / 2 }
local pairs4 = math.max(h[4], h[1]) + math.max(h[2], h[1]) + math.max(h[2], h[3]) + math.max(h[4], h[3])
print(string.format("serial %.4f s, two streams %.4f s, four pairs %.4f s (%+.2f%%)", P.c1 + P.x1 + P.c2 + P.x2,
                    streams, pairs4, (streams - pairs4) / pairs4 * 100))
return { streams = streams, pairs = pairs4 }
