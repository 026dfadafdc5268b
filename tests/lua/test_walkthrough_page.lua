-- hl.walkthrough (the page): the page's text is escaped, its steps follow the mapping, large mappings
-- are drawn by cells or by HBD blocks, and a notebook embeds it. (The Chromium checks and
-- the DOM-equals-simulate check: tests/host/test_walkthrough.sh.)
local T = require "testlib"
local hl = require "hbdlab"
hl.warnings(false)

local function count(s, pat) local n = 0 for _ in s:gmatch(pat) do n = n + 1 end return n end

T.test("a model or GPU name cannot inject markup", function()
  local m = hl.model { base = "llama-3.1-8b", name = "<script>alert(1)</script>" }
  local g = hl.gpu { base = "H100-SXM", name = "\"><img src=x onerror=alert(2)>" }
  local html = hl.walkthrough { model = m, cluster = hl.cluster { gpu = g, gpus = 4, hbd = 2 },
                                parallel = { tp = 2, pp = 2 } }
  T.ok(not html:find("<script>alert", 1, true), "the model name is not a script")
  T.ok(not html:find("<img src=x", 1, true), "the GPU name is not an element")
  T.ok(html:find("&lt;script&gt;alert(1)&lt;/script&gt;", 1, true), "the model name is shown, escaped")
  T.ok(html:find("&quot;&gt;&lt;img src=x onerror=alert(2)&gt;", 1, true), "the GPU name is shown, escaped")
  T.eq(count(html, "<script>"), 1, "one script element: the page's own")
end)

T.test("steps follow the mapping", function()
  local job = { model = "llama-3.1-8b", cluster = { gpu = "H100-SXM", gpus = 4, hbd = 2 }, batch = 8, input = 2048,
                output = 256, parallel = { tp = 2, pp = 2 } }
  local r = hl.simulate(job)
  local from_result, from_job = hl.walkthrough(r), hl.walkthrough(job)
  T.eq(from_result, from_job, "a result and its job give the same page")
  -- TP2 x PP2: prompt, stage 1, PP hand-off, stage 2, logits, sampling, decode = 7 steps
  T.eq(count(from_job, 'class="step" data%-step='), 7, "7 steps")
  T.ok(from_job:find("PP hand-off: stage 1 -&gt; stage 2", 1, true), "the hand-off step")
  T.ok(not from_job:find("MoE dispatch and combine, stage", 1, true), "no MoE step for a dense model")
  local moe = hl.walkthrough { model = "mixtral-8x7b", cluster = { gpu = "H100-SXM", gpus = 4, hbd = 2 },
                               parallel = { tp = 1, ep = 4 }, batch = 4 }
  T.ok(moe:find("MoE dispatch and combine, stage 1", 1, true), "an MoE step where the model has experts")
  T.ok(moe:find('data-row="prefill/ep_dispatch"', 1, true), "with the dispatch row")
  T.ok(moe:find('class="prim used" data-op="alltoall"', 1, true), "All-to-All highlighted as used")
  T.ok(moe:find('class="prim" data-op="reduce"', 1, true), "Reduce not used")
  T.eq(count(moe, 'class="prim[^"]*" data%-op='), 9, "nine primitives")
  T.ok(moe:find("Not needed in this mapping", 1, true), "tp 1: no logits AllGather, and the page says so")
end)

T.test("large mappings: numbered cells, then one block per HBD", function()
  local nvl = hl.walkthrough { model = "llama-3.1-70b", cluster = "gb200-nvl72", parallel = { tp = 8, pp = 1 },
                               batch = 72 }
  T.eq(count(nvl, '<g class="gpu" data%-gpu='), 72, "72 GPUs as cells")
  T.eq(count(nvl, 'class="tpgroup"'), 9, "9 TP groups of 8 outlined")
  local big = hl.walkthrough { model = "llama-3.1-70b", cluster = { gpu = "H100-SXM", gpus = 1024, hbd = 8 },
                               parallel = { tp = 8, pp = 4 }, batch = 64 }
  T.eq(count(big, '<g class="gpu" data%-gpu='), 128, "1024 GPUs as 128 HBD blocks")
  T.ok(#big < 400000, "the page stays small: " .. #big .. " bytes")
end)

T.test("a notebook embeds the page", function()
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. dir))
  local nb = require "hbdlab.notebook"
  local cells = nb.parse("# Walk\n\n```lua\nhl.walkthrough({ model = 'llama-3.1-8b', cluster = { gpu = 'H100-SXM', " ..
    "gpus = 4, hbd = 2 }, parallel = { tp = 2, pp = 2 } }, '" .. dir .. "/walk.html')\n```\n")
  local _, failures = nb.run(cells)
  T.eq(failures, 0, "the cell ran")
  local html = nb.html(cells, "walk")
  T.ok(html:find('<iframe class="page" sandbox="allow-scripts"', 1, true), "embedded in a sandboxed frame")
  T.ok(html:find("srcdoc=\"&lt;!DOCTYPE html&gt;", 1, true), "the page as the frame's document, escaped")
  T.ok(nb.markdown(cells):find("[" .. dir .. "/walk.html](", 1, true), "Markdown links the page")
  os.execute("rm -rf " .. dir)
end)

T.done()
