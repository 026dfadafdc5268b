-- Regenerates the example walkthrough pages README links (hl.walkthrough):
--   build/hbdlab scripts/walkthrough_pages.lua [OUTDIR]   (default docs/walkthrough)
-- 1. the source document's case: llama-3.1-8b as TP2 x PP2 on 4 H100 in 2 servers of 2,
--    the job of scripts/walkthrough_tp2pp2.lua;
-- 2. a DeepSeek-V3 EP case: the prefill layout of the DeepSeek-V3 technical report (arXiv
--    2412.19437, section 3.4.1: attention TP4 with DP8, MoE EP32 on 4 nodes of 8 H800; here 4
--    HGX H100 servers), FP8.
-- tests/host/test_walkthrough.sh checks the committed pages equal what this writes.
local hl = require "hbdlab"
local first = ...
local cases = {
  { file = "tp2pp2.html", job = { model = "llama-3.1-8b", cluster = { gpu = "H100-SXM", gpus = 4, hbd = 2 },
    precision = "bf16", batch = 8, input = 2048, output = 256, parallel = { tp = 2, pp = 2 } } },
  { file = "deepseek_v3_ep32.html", job = { model = "deepseek-v3", cluster = { gpu = "H100-SXM", gpus = 32, hbd = 8 },
    precision = "fp8", batch = 64, input = 2048, output = 256, parallel = { tp = 4, dp = 8, ep = 32 } } },
}
if first == "cases" then return cases end -- loadfile(this)("cases"): the jobs only (the DOM check)
local out = first or "docs/walkthrough"
for _, c in ipairs(cases) do
  print(hl.walkthrough(c.job, out .. "/" .. c.file))
end
