-- hl.walkthrough(r | job, path): the communication flow of one simulated job as a
-- self-contained HTML page (inline SVG, CSS and a little JavaScript; nothing is
-- loaded from the network). Every number on the page is one of the simulator's:
-- the breakdown rows of r.prefill / r.decode (operators, and each collective with
-- its op, ranks, HBDs, bytes and time per call, calls) and hl.net_requirement fed
-- with them, as scripts/walkthrough_tp2pp2.lua prints them. No byte or time
-- formula lives here; the KV fill per step is r.memory.kv_bytes scaled by the
-- tokens held (the KV cache grows linearly with tokens, docs/MODEL.md section 4).
local core = require "hbdlab.core"
local objects = require "hbdlab.objects"

local M = {}

-- ---------------------------------------------------------------- numbers from the rows

--- The breakdown row `name` of a phase, or nil when the simulator counted none.
function M.row(r, phase, name)
  for _, it in ipairs(r[phase].breakdown) do
    if it.name == name then return it end
  end
  return nil
end

--- Time of one stage's pass over its layers: the operator rows inside the layers (one pass, whole batch).
function M.layer_ops_s(r, phase)
  local t = 0
  for _, it in ipairs(r[phase].breakdown) do
    if it.kind == "op" and not it.per_pass then t = t + it.time_s end
  end
  return t
end

--- A traffic class for the requirements table: the rows `names` of one phase on one tier, `per` steps,
--- compute C of one step. Several rows become one class of count = sum of calls with the mean bytes and
--- latency per call (the same total time); hl.net_requirement gives the bandwidth and latency it needs.
--- Returns { name, tier, count, bytes each, sent each, compute_s, bandwidth, max_latency_s }.
function M.need(name, r, phase, names, tier, per, C, share)
  local n, S, sent, alpha = 0, 0, 0, 0
  for _, nm in ipairs(names) do
    local it = M.row(r, phase, nm)
    if not it then error(string.format("walkthrough: the simulator counted no '%s' in %s", nm, phase), 2) end
    local k = it.calls / per
    n, S, alpha = n + k, S + k * it.call_bytes, alpha + k * it.call_latency_s
    sent = sent + k * (tier == "scale-out" and it.call_scaleout_bytes or it.call_scaleup_bytes)
  end
  local q = core.net_requirement { count = n, bytes = S / n, factor = sent / S, compute_s = C, latency_s = alpha / n,
                                   share = share }
  return { name, tier, n, S / n, sent / n, C, q.bandwidth, q.max_latency_s }
end

-- The requirement classes of a job: TP, PP and EP traffic found in its rows, on each tier it uses.
local function requirements(r, share)
  local steps = math.max(r.output - 1, 1)
  local pass = M.layer_ops_s(r, "prefill")
  local decode_step = (r.decode.compute_s + r.decode.memory_s) / steps
  local out = {}
  local function add(label, phase, names, per, C)
    local up, so = 0, 0
    for _, nm in ipairs(names) do
      local it = M.row(r, phase, nm)
      if not it or it.calls == 0 then return end
      up, so = up + it.call_scaleup_bytes, so + it.call_scaleout_bytes
    end
    if up > 0 then out[#out + 1] = M.need(label, r, phase, names, "scale-up", per, C, share) end
    if so > 0 then out[#out + 1] = M.need(label, r, phase, names, "scale-out", per, C, share) end
  end
  add("TP prefill (AllReduce, per stage)", "prefill", { "tp_allreduce" }, 1, pass)
  if r.output > 1 then add("TP decode (AllReduce, per step)", "decode", { "tp_allreduce" }, steps, decode_step) end
  add("PP (Send/Recv, per prefill)", "prefill", { "pp_sendrecv" }, 1, pass)
  add("EP prefill (All-to-All, per stage)", "prefill", { "ep_dispatch", "ep_combine" }, 1, pass)
  if r.output > 1 then
    add("EP decode (All-to-All, per step)", "decode", { "ep_dispatch", "ep_combine" }, steps, decode_step)
  end
  return out
end
M.requirements = requirements

-- ---------------------------------------------------------------- text

local function esc(s)
  return (tostring(s):gsub("[&<>\"']", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;",
                                         ["'"] = "&#39;" }))
end
M.escape = esc

local function bytes(b) return objects.si(b, "B") end
--- A time as the page shows it (ms with 3 decimals, as the script; us below 10 us).
function M.time(s)
  if s ~= 0 and math.abs(s) < 1e-5 then return string.format("%.2f us", s * 1e6) end
  return string.format("%.3f ms", s * 1e3)
end
local ms = M.time
local function exact(v) return string.format("%.17g", v) end

local primitives = {
  { "allreduce", "AllReduce", "Z1 Z2 -> Z Z", "sums partial results on every rank (TP row-parallel outputs)" },
  { "allgather", "AllGather", "A B -> AB AB", "every rank gets every shard (vocab-parallel logits)" },
  { "reducescatter", "ReduceScatter", "ABC x3 -> A B C summed", "sums, then each rank keeps a slice (training, SP)" },
  { "alltoall", "All-to-All", "A1A2 B1B2 -> A1B1 A2B2", "each rank sends a part to every other (MoE dispatch and combine)" },
  { "sendrecv", "Send/Recv", "A - -> - A", "point to point (PP hand-off of activations)" },
  { "broadcast", "Broadcast", "X - -> X X", "one rank to all (sampled token ids)" },
  { "scatter", "Scatter", "ABCD - -> AB CD", "one rank splits its data across ranks (sequence parallel input)" },
  { "gather", "Gather", "A B -> AB -", "all ranks to one (collecting outputs)" },
  { "reduce", "Reduce", "1 2 3 -> 6 - -", "sums onto one rank (training)" },
}
local prim_name = {}
for _, p in ipairs(primitives) do prim_name[p[1]] = p[2] end

-- ---------------------------------------------------------------- layout

-- GPU g of G: pipeline stage floor(g / (G/pp)); inside a stage, tensor-parallel groups of tp
-- consecutive GPUs (attention data-parallel replica d = local // tp), the whole stage one EP group
-- (ep x etp = dp x tp GPUs); HBD floor(g / hbd). Consecutive placement, as the simulator's packed
-- collectives assume (ranks_per_hbd of its rows).
local function layout(r, hbd)
  local p = r.parallel
  local G = p.gpus
  local per_stage = G // p.pp
  local gpus = {}
  for g = 0, G - 1 do
    local loc = g % per_stage
    gpus[g + 1] = { id = g, stage = g // per_stage, tp_rank = loc % p.tp, replica = loc // p.tp, hbd = g // hbd }
  end
  return gpus, per_stage
end

local function range_text(a, b) return a == b and tostring(a) or (a .. "-" .. b) end

-- ---------------------------------------------------------------- steps

-- One collective of a step: the row, the calls it makes per pass / per decode step.
local function coll(it, per)
  return { row = it, calls = it.calls / per }
end

local function build_steps(r, m, per_stage)
  local p = r.parallel
  local L, pp = m.layers, p.pp
  local steps, dsteps = {}, r.output - 1
  local used = {}
  local pass = M.layer_ops_s(r, "prefill")
  local emb, head = M.row(r, "prefill", "embedding"), M.row(r, "prefill", "lm_head")
  local named = { pp_sendrecv = true, logits_allgather = true, token_broadcast = true, ep_dispatch = true,
                  ep_combine = true }
  local in_layers, moe = {}, {}
  for _, it in ipairs(r.prefill.breakdown) do
    if it.kind == "comm" then
      used[it.op] = true
      if it.name:match("^ep_") or it.name:match("^moe_") then moe[#moe + 1] = coll(it, 1)
      elseif not named[it.name] then in_layers[#in_layers + 1] = coll(it, 1) end
    end
  end
  for _, it in ipairs(r.decode.breakdown) do if it.kind == "comm" then used[it.op] = true end end
  local function stage_gpus(s) return { { s * per_stage, (s + 1) * per_stage - 1 } } end
  local all = { { 0, p.gpus - 1 } }
  local elapsed = 0
  local function add(st)
    st.compute_s = st.compute_s or 0
    local c = 0
    for _, x in ipairs(st.colls or {}) do c = c + x.calls * x.row.call_time_s * x.row.path_factor end
    st.comm_s = c
    if st.phase == "prefill" then elapsed = elapsed + st.compute_s + c end
    st.elapsed_s = elapsed
    steps[#steps + 1] = st
  end
  add { phase = "prefill", title = "Prompt distribution",
        text = string.format("The batch of %d prompts of %d tokens reaches the GPUs of stage 1. Not modelled: the " ..
          "simulator takes the prompt's token ids as already on the GPUs (a few kB), so no bytes or time here.",
          r.batch, r.input), active = stage_gpus(0), kv_tokens = 0, stages_done = 0, prims = { "broadcast" },
        unmodelled = true }
  local per_layers = L // pp
  for s = 0, pp - 1 do
    local lo, hi = s * per_layers + 1, (s == pp - 1) and L or (s + 1) * per_layers
    local extra, ex_t = "", 0
    if s == 0 and emb then extra, ex_t = "the embedding, then ", emb.time_s end
    local tail = ""
    if s == pp - 1 and head then tail, ex_t = ", then the LM head", ex_t + head.time_s end
    add { phase = "prefill", title = string.format("Prefill, stage %d: layers %d-%d", s + 1, lo, hi),
          text = string.format("GPUs %s run %s%d layers over the whole prompt%s%s. Operators take %s per pass " ..
            "(the breakdown's operator rows).", range_text(s * per_stage, (s + 1) * per_stage - 1), extra,
            hi - lo + 1, tail, #in_layers > 0 and "; the collectives inside the layers are below" or "",
            ms(pass + ex_t)),
          active = stage_gpus(s), colls = in_layers, compute_s = pass + ex_t, kv_tokens = r.input,
          stages_done = s + 1, verb = "computing" }
    if #moe > 0 then
      add { phase = "prefill", title = string.format("MoE dispatch and combine, stage %d", s + 1),
            text = string.format("In each MoE layer of the stage, the router sends every token to its experts " ..
              "across the EP group of %d GPUs (All-to-All dispatch) and the expert outputs come back (combine)%s.",
              p.ep * p.etp, M.row(r, "prefill", "moe_allgather") and "; then moe_allgather gives every attention TP rank " ..
              "all tokens again (each combined only its share)" or ""),
            active = stage_gpus(s), colls = moe, kv_tokens = r.input, stages_done = s + 1 }
    end
    local pps = M.row(r, "prefill", "pp_sendrecv")
    if s < pp - 1 and pps then
      add { phase = "prefill", title = string.format("PP hand-off: stage %d -> stage %d", s + 1, s + 2),
            text = "The activations of the whole batch leave the last layer of the stage for the next stage " ..
              "(Send/Recv).", active = { { s * per_stage, (s + 2) * per_stage - 1 } }, colls = { coll(pps, 1) },
            kv_tokens = r.input, stages_done = s + 1 }
    end
  end
  local lag = M.row(r, "prefill", "logits_allgather")
  add { phase = "prefill", title = "Logits AllGather",
        text = lag and "The LM head is split by vocabulary across the TP group: each GPU holds a slice of the " ..
          "logits, gathered for sampling." or string.format("Not needed in this mapping: with tp %d each GPU " ..
          "holds the whole LM head (the simulator counts no logits AllGather).", p.tp),
        active = stage_gpus(pp - 1), colls = lag and { coll(lag, 1) } or {}, kv_tokens = r.input, stages_done = pp }
  local tb = M.row(r, "prefill", "token_broadcast")
  add { phase = "prefill", title = "Sampling and token-id broadcast",
        text = (tb and string.format("The last stage samples one token per sequence; its id is broadcast to the " ..
          "%d GPUs that run the next step.", tb.ranks) or "The last stage samples one token per sequence; no " ..
          "broadcast is counted in this mapping (every GPU that needs the ids computes them).") ..
          " The first token is out: the TTFT.",
        active = tb and all or stage_gpus(pp - 1), colls = tb and { coll(tb, 1) } or {}, kv_tokens = r.input,
        stages_done = pp, ttft = true }
  if dsteps >= 1 then
    local dc = {}
    for _, it in ipairs(r.decode.breakdown) do
      if it.kind == "comm" then dc[#dc + 1] = coll(it, dsteps) end
    end
    add { phase = "decode", title = "A decode step (1 token per sequence)",
          text = string.format("Every stage runs its layers for one new token per sequence, reading its weights " ..
            "and the KV cache; the same collectives as prefill with small messages, once per step for %d steps. " ..
            "Operators take %s per step (decode compute + memory / steps).", dsteps,
            ms((r.decode.compute_s + r.decode.memory_s) / dsteps)),
          active = all, colls = dc, compute_s = (r.decode.compute_s + r.decode.memory_s) / dsteps,
          kv_tokens = r.input + r.output, stages_done = pp, tpot = true }
  end
  for _, st in ipairs(steps) do
    st.prims = st.prims or {}
    for _, x in ipairs(st.colls or {}) do st.prims[#st.prims + 1] = x.row.op end
    local up, out = false, false
    for _, x in ipairs(st.colls or {}) do
      if x.row.hbds > 1 then out = true end
      if x.row.call_scaleup_bytes > 0 or x.row.hbds == 1 then up = true end
    end
    st.tiers = (up and "up" or "") .. (out and " out" or "")
  end
  return steps, used
end

-- ---------------------------------------------------------------- drawing

local STAGE_COLORS = { "#2f6fdf", "#8e44ad", "#d9822b", "#16a085", "#c0392b", "#2c3e50", "#7f8c2d", "#b03a7a" }

-- Three drawings by size: cards with text per GPU (up to 16 GPUs), numbered cells (up to 512),
-- one block per HBD beyond (the mapping is symmetric, so a block stands for its GPUs).
local function svg_topology(c, gpus, hbd, tp)
  local G = #gpus
  local nh = (G + hbd - 1) // hbd
  local mode = G <= 16 and "cards" or G <= 512 and "cells" or "blocks"
  local per_box = math.min(hbd, G)
  local cw, ch, gap, per_row
  if mode == "cards" then cw, ch, gap, per_row = 128, 74, 12, math.min(per_box, 4)
  elseif mode == "cells" and nh > 4 then cw, ch, gap, per_row = 21, 21, 3, math.min(per_box, 16)
  elseif mode == "cells" then cw, ch, gap, per_row = 28, 28, 4, math.min(per_box, 16)
  else cw, ch, gap, per_row = 0, 0, 0, 0 end
  local box_w = mode == "blocks" and 46 or per_row * (cw + gap) + gap
  local rows_in = mode == "blocks" and 1 or (per_box + per_row - 1) // per_row
  local box_h = mode == "blocks" and 40 or 34 + rows_in * (ch + gap) + 16
  local hgap = mode == "blocks" and 6 or nh > 4 and 16 or 26
  local cols_h = math.max(1, math.min(nh, (700 - hgap) // (box_w + hgap)))
  local shown = mode == "blocks" and math.min(nh, 256) or nh
  local W = math.max(cols_h * (box_w + hgap) + hgap, 560)
  local brow = (shown + cols_h - 1) // cols_h
  local H = brow * (box_h + hgap) + hgap + 50
  local o = {}
  o[#o + 1] = string.format('<svg id="topo" class="%s" viewBox="0 0 %d %d" width="%d" role="img" ' ..
    'aria-label="GPUs grouped by HBD and pipeline stage">', mode, W, H, W)
  local net_y = H - 44
  o[#o + 1] = string.format('<rect class="net" id="net-out" x="%d" y="%d" width="%d" height="26" rx="6"/>' ..
    '<text class="netlabel" x="%d" y="%d">scale-out network (%s per GPU per direction)%s</text>', hgap, net_y,
    W - 2 * hgap, hgap + 10, net_y + 17, esc(objects.si(c.scaleout_bw, "B/s")),
    shown < nh and esc(string.format("; %d of %d HBDs drawn", shown, nh)) or "")
  for h = 0, shown - 1 do
    local bx = hgap + (h % cols_h) * (box_w + hgap)
    local by = hgap + (h // cols_h) * (box_h + hgap)
    local n_in = math.min(hbd, G - h * hbd)
    if mode == "blocks" then -- one block per HBD: its number, its stage's colour, its GPUs in the tooltip
      local g0 = gpus[h * hbd + 1]
      o[#o + 1] = string.format('<g class="gpu" data-gpu="%d" data-last="%d" data-stage="%d"><rect class="cell" ' ..
        'x="%d" y="%d" width="%d" height="%d" rx="5" style="stroke:%s"/><text class="cellid" x="%d" y="%d">%d</text>' ..
        '<rect class="uplink" data-hbd="%d" x="%d" y="%d" width="%d" height="4" rx="2"/><title>HBD %d: GPUs %s, ' ..
        'stage %d</title></g>', g0.id, g0.id + n_in - 1, g0.stage, bx, by, box_w, box_h,
        STAGE_COLORS[g0.stage % #STAGE_COLORS + 1], bx + box_w // 2, by + 20, h, h, bx + 6, by + box_h - 9,
        box_w - 12, h, range_text(g0.id, g0.id + n_in - 1), g0.stage + 1)
    else
      o[#o + 1] = string.format('<line class="solink" data-hbd="%d" x1="%d" y1="%d" x2="%d" y2="%d"/>', h,
        bx + box_w // 2, by + box_h, bx + box_w // 2, net_y)
      o[#o + 1] = string.format('<g class="hbd" data-hbd="%d"><rect class="hbdbox" x="%d" y="%d" width="%d" ' ..
        'height="%d" rx="10"/><text class="hbdlabel" x="%d" y="%d">HBD %d: GPUs %s</text>' ..
        '<rect class="uplink" data-hbd="%d" x="%d" y="%d" width="%d" height="6" rx="3"/></g>', h, bx, by, box_w,
        box_h, bx + 10, by + 18, h, range_text(h * hbd, h * hbd + n_in - 1), h, bx + 8, by + box_h - 12, box_w - 16)
    end
    for k = 0, (mode == "blocks" and -1 or n_in - 1) do
      local gi = gpus[h * hbd + k + 1]
      local x = bx + gap + (k % per_row) * (cw + gap)
      local y = by + 28 + (k // per_row) * (ch + gap)
      local color = STAGE_COLORS[gi.stage % #STAGE_COLORS + 1]
      if mode == "cells" then
        o[#o + 1] = string.format('<g class="gpu" data-gpu="%d" data-stage="%d"><rect class="cell" x="%d" y="%d" ' ..
          'width="%d" height="%d" rx="4" style="stroke:%s"/><text class="cellid" x="%d" y="%d">%d</text><title>' ..
          'GPU %d: stage %d, TP rank %d, DP replica %d</title></g>', gi.id, gi.stage, x, y, cw, ch, color,
          x + cw // 2, y + ch // 2 + 4, gi.id, gi.id, gi.stage + 1, gi.tp_rank, gi.replica)
      else
        o[#o + 1] = string.format('<g class="gpu" data-gpu="%d" data-stage="%d"><rect class="gpubox" x="%d" ' ..
          'y="%d" width="%d" height="%d" rx="8" style="stroke:%s"/><text class="gpuname" x="%d" y="%d">GPU %d' ..
          '</text><text class="gpuinfo" x="%d" y="%d">stage %d &#183; TP rank %d</text><text class="gpustate" ' ..
          'x="%d" y="%d">idle</text><rect class="hbm" x="%d" y="%d" width="%d" height="8" rx="2"/><rect ' ..
          'class="wbar" x="%d" y="%d" width="0" height="8"/><rect class="kvbar" x="%d" y="%d" width="0" ' ..
          'height="8"/></g>', gi.id, gi.stage, x, y, cw, ch, color, x + 8, y + 16, gi.id, x + 8, y + 31,
          gi.stage + 1, gi.tp_rank, x + 8, y + 46, x + 8, y + 56, cw - 16, x + 8, y + 56, x + 8, y + 56)
      end
    end
    -- TP groups (tp consecutive GPUs): one outline per group and row of the box
    if mode ~= "blocks" and tp > 1 then
      local k = 0
      while k < n_in do
        local last = math.min(k + tp - (gpus[h * hbd + k + 1].id % tp), n_in) - 1
        local row_end = (k // per_row + 1) * per_row - 1
        last = math.min(last, row_end)
        local x = bx + gap + (k % per_row) * (cw + gap) - gap / 2
        local y = by + 28 + (k // per_row) * (ch + gap) - gap / 2
        o[#o + 1] = string.format('<rect class="tpgroup" x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="6"/>', x, y,
          (last - k + 1) * (cw + gap), ch + gap)
        k = last + 1
      end
    end
  end
  o[#o + 1] = "</svg>"
  return table.concat(o)
end

-- ---------------------------------------------------------------- the page

local CSS = [[
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
color:#1d2330;background:#f4f6fa}header{background:#1d2b4a;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px}header p{margin:4px 0 0;color:#c9d4ea}main{padding:16px 24px;
display:grid;grid-template-columns:minmax(520px,1.25fr) minmax(420px,1fr);gap:16px}
.card{background:#fff;border-radius:10px;box-shadow:0 1px 3px #0002;padding:14px 16px}
h2{font-size:16px;margin:0 0 8px}nav{display:flex;align-items:center;gap:10px;margin-bottom:10px}
button{font:inherit;padding:6px 14px;border-radius:6px;border:1px solid #9aa7c0;background:#eef2fa;
cursor:pointer}button:disabled{opacity:.4;cursor:default}#stepno{font-weight:600}
.step{display:none}.step.on{display:block}.phase{display:inline-block;padding:1px 8px;border-radius:9px;
font-size:12px;font-weight:600;color:#fff;background:#2f6fdf;margin-left:6px}.phase.decode{background:#d9822b}
.note{color:#5a6477;font-size:13px}table{border-collapse:collapse;width:100%;font-size:13px;margin:6px 0}
th,td{border-bottom:1px solid #e3e7ef;padding:3px 5px;text-align:left}table.req td:first-child{min-width:150px}td.num,th.num{text-align:right;
font-variant-numeric:tabular-nums}.cross{color:#c0392b;font-weight:600}.inhbd{color:#16a085;font-weight:600}
.metrics{display:flex;gap:18px;flex-wrap:wrap;margin:8px 0}.metric b{display:block;font-size:17px}
.kvrow{display:flex;align-items:center;gap:8px;font-size:12px;margin:2px 0}.kvtrack{flex:1;height:10px;
background:#e8ecf3;border-radius:5px;overflow:hidden;display:flex}.kvw{background:#9aa7c0}.kvk{background:#2f6fdf}
#topo{max-width:100%;height:auto}.hbdbox{fill:#f7f9fd;stroke:#9aa7c0;stroke-width:1.5}
.hbdlabel,.netlabel{font-size:12px;fill:#3a4458;font-weight:600}.net{fill:#eef1f6;stroke:#9aa7c0;
stroke-dasharray:5 4}.solink{stroke:#9aa7c0;stroke-width:2;stroke-dasharray:6 5}.uplink{fill:#b8c7e6}
.gpu rect.gpubox,rect.gpu,.gpu rect.cell{fill:#fff;stroke-width:2.5}
.tpgroup{fill:none;stroke:#1d2330;stroke-width:1.2;stroke-dasharray:3 2}
svg.cells .cellid{font-size:10px}.cellid{font-size:11px;text-anchor:middle;fill:#3a4458}.gpuname{font-size:13px;font-weight:700}
.gpuinfo,.gpustate{font-size:11px;fill:#5a6477}.hbm{fill:#e8ecf3}.wbar{fill:#9aa7c0}.kvbar{fill:#2f6fdf}
.gpu.active rect.gpubox,rect.gpu.active,.gpu.active rect.cell{fill:#ffe9a8}.gpu.active .gpustate{fill:#8a5a00;font-weight:700}
.on-up .uplink.hot{fill:#16a085}.on-out .net{fill:#fde2dc;stroke:#c0392b}.on-out .solink.hot{stroke:#c0392b;
stroke-width:3.5}.prims{display:grid;grid-template-columns:repeat(3,1fr);gap:6px}.prim{border:1px solid #dde3ee;
border-radius:8px;padding:6px 8px;font-size:12px;background:#fafbfd}.prim b{font-size:13px}.prim code{display:block;
color:#3a4458}.prim.used{border-color:#2f6fdf;background:#eef4ff}.prim.now{border-color:#c0392b;
background:#fff1ec;box-shadow:0 0 0 2px #c0392b55}.legend span{display:inline-block;margin-right:12px;font-size:12px}
.sw{display:inline-block;width:12px;height:12px;border-radius:3px;vertical-align:-2px;margin-right:4px}
.scroll{overflow-x:auto}table.colls{font-size:12.5px}table.colls td,table.colls th{padding:3px 4px}
.wide{grid-column:1 / -1}@media (max-width:1000px){main{grid-template-columns:1fr}}
footer{padding:0 24px 20px;color:#5a6477;font-size:12px}
]]

-- Steps and GPUs highlighted by class; #step=N (1-based) opens a step; arrows and buttons move.
local JS = [[
(function(){
var steps=[].slice.call(document.querySelectorAll('.step'));var n=steps.length;var cur=0;
var gpus=[].slice.call(document.querySelectorAll('[data-gpu]'));var topo=document.getElementById('topo');
var prims=[].slice.call(document.querySelectorAll('.prim'));
function inRanges(g,spec){var parts=spec.split(',');for(var i=0;i<parts.length;i++){var ab=parts[i].split('-');
var a=+ab[0],b=ab.length>1?+ab[1]:a;if(g>=a&&g<=b)return true;}return false;}
function show(i){cur=Math.max(0,Math.min(n-1,i));var s=steps[cur];
steps.forEach(function(x,j){x.classList.toggle('on',j===cur);});
var act=s.getAttribute('data-active');var kv=s.getAttribute('data-kv').split(',').map(Number);
var w=+s.getAttribute('data-wfrac');
gpus.forEach(function(el){var g=+el.getAttribute('data-gpu');
var on=inRanges(g,act)||(el.hasAttribute('data-last')&&inRanges(+el.getAttribute('data-last'),act));
el.classList.toggle('active',on);
var st=el.querySelector('.gpustate');if(st)st.textContent=on?s.getAttribute('data-verb'):'idle';
var hbm=el.querySelector('.hbm');if(hbm){var full=+hbm.getAttribute('width');var x0=+hbm.getAttribute('x');
var wb=el.querySelector('.wbar'),kb=el.querySelector('.kvbar');var f=kv[+el.getAttribute('data-stage')]||0;
wb.setAttribute('width',(full*w).toFixed(1));kb.setAttribute('x',(x0+full*w).toFixed(1));
kb.setAttribute('width',(full*f).toFixed(1));}});
var tiers=s.getAttribute('data-tiers');topo.classList.toggle('on-up',tiers.indexOf('up')>=0);
topo.classList.toggle('on-out',tiers.indexOf('out')>=0);
var hb=s.getAttribute('data-hbds').split(',');
[].slice.call(topo.querySelectorAll('.uplink,.solink')).forEach(function(el){
el.classList.toggle('hot',hb.indexOf(el.getAttribute('data-hbd'))>=0);});
var now=s.getAttribute('data-prims').split(' ');
prims.forEach(function(p){p.classList.toggle('now',now.indexOf(p.getAttribute('data-op'))>=0);});
document.getElementById('stepno').textContent='Step '+(cur+1)+' / '+n;
document.getElementById('prev').disabled=cur===0;document.getElementById('next').disabled=cur===n-1;
try{history.replaceState(null,'','#step='+(cur+1));}catch(e){}document.body.setAttribute('data-step',cur+1);}
document.getElementById('prev').onclick=function(){show(cur-1);};
document.getElementById('next').onclick=function(){show(cur+1);};
document.addEventListener('keydown',function(e){if(e.key==='ArrowRight')show(cur+1);
else if(e.key==='ArrowLeft')show(cur-1);});
var m=/step=(\d+)/.exec(location.hash);show(m?(+m[1])-1:0);
})();
]]

local function td(v, text, field)
  return string.format('<td class="num" data-field="%s" data-v="%s">%s</td>', field, exact(v), esc(text))
end

--- The page of result r (with its job fields, for the cluster and the model) as HTML text.
function M.html(r, job, opts)
  opts = opts or {}
  local share = opts.share or 0.10
  local m = objects.coerce("model", job.model)
  local c = objects.coerce("cluster", job.cluster)
  local hbd = c.hbd
  local gpus, per_stage = layout(r, hbd)
  local steps, used = build_steps(r, m, per_stage)
  local p = r.parallel
  local hbm = c.gpu.hbm_bytes
  local wfrac = math.min(r.memory.weights_bytes / hbm, 1)
  local kv_full = r.memory.kv_bytes -- per GPU at the largest context (input + output tokens)
  local ctx = r.input + r.output
  local title = opts.title or string.format("%s on %d x %s: tp %d, pp %d, ep %d, dp %d", m.name, p.gpus, c.gpu.name,
    p.tp, p.pp, p.ep, p.dp)
  local o = {}
  local function w(s) o[#o + 1] = s end
  w('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" ' ..
    'content="width=device-width,initial-scale=1"><title>' .. esc(title) .. '</title><style>' .. CSS ..
    '</style></head><body>')
  w('<header><h1>' .. esc(title) .. '</h1><p>' .. esc(string.format(
    "hbdlab %s; %s; batch %d, prompt %d tokens, %d generated; %d HBD(s) of %d GPUs; every number is the " ..
    "simulator's (hl.simulate breakdown rows)", core.version(), r.precision, r.batch, r.input, r.output,
    (p.gpus + hbd - 1) // hbd, hbd)) .. '</p></header><main>')
  -- topology
  local svg = svg_topology(c, gpus, hbd, p.tp)
  w('<section class="card"><h2>GPUs by HBD and pipeline stage</h2><div class="legend">')
  for s = 0, math.min(p.pp, #STAGE_COLORS) - 1 do
    w(string.format('<span><i class="sw" style="background:%s"></i>stage %d (GPUs %s)</span>',
      STAGE_COLORS[s + 1], s + 1, range_text(s * per_stage, (s + 1) * per_stage - 1)))
  end
  w('<span><i class="sw" style="background:#ffe9a8;border:1px solid #c9a227"></i>working in this step</span>' ..
    '<span><i class="sw" style="background:#16a085"></i>link inside the HBD</span><span><i class="sw" ' ..
    'style="background:#c0392b"></i>crossing the scale-out network</span></div>')
  w(svg)
  local groups = {}
  groups[#groups + 1] = string.format("TP groups of %d consecutive GPUs (%d per stage)", p.tp, per_stage // p.tp)
  if p.dp > 1 then groups[#groups + 1] = string.format("%d attention DP replicas per stage", p.dp) end
  if m.experts > 0 then
    groups[#groups + 1] = string.format("one EP group per stage: %d GPUs hold %d routed experts (ep %d, etp %d)",
      p.ep * p.etp, m.experts, p.ep, p.etp)
  end
  if p.pp > 1 then groups[#groups + 1] = string.format("%d pipeline stages of %d layers", p.pp, m.layers // p.pp) end
  local mode_note = p.gpus <= 16 and ("GPU bars: weights (grey) and KV cache (blue) of " .. bytes(hbm) .. " HBM.")
    or p.gpus <= 512 and "Hover a GPU for its stage, TP rank and DP replica; the KV cache per GPU is in the step panel."
    or string.format("Each block is one HBD of %d GPUs (hover for its GPUs); the KV cache per GPU is in the step panel.",
      hbd)
  w('<p class="note">' .. esc(table.concat(groups, "; ") .. ". " .. mode_note) .. '</p></section>')
  -- steps
  w('<section class="card"><nav><button id="prev" type="button">&larr; Previous</button><span id="stepno">Step 1 / ' ..
    #steps .. '</span><button id="next" type="button">Next &rarr;</button><span class="note">(arrow keys)</span>' ..
    '</nav>')
  for i, st in ipairs(steps) do
    local kv = {}
    for s = 0, p.pp - 1 do
      local tok = (s < st.stages_done) and st.kv_tokens or 0
      kv[s + 1] = string.format("%.4f", math.min(kv_full * tok / ctx / hbm, 1 - wfrac))
    end
    local spec = {}
    for _, rg in ipairs(st.active) do spec[#spec + 1] = rg[1] .. "-" .. rg[2] end
    local hot = {}
    for _, rg in ipairs(st.active) do
      for h = rg[1] // hbd, rg[2] // hbd do hot[#hot + 1] = tostring(h) end
    end
    w(string.format('<div class="step" data-step="%d" data-active="%s" data-kv="%s" data-wfrac="%.4f" ' ..
      'data-tiers="%s" data-hbds="%s" data-prims="%s" data-verb="%s">', i, table.concat(spec, ","),
      table.concat(kv, ","), wfrac, st.tiers, table.concat(hot, ","), esc(table.concat(st.prims, " ")),
      st.verb or (st.phase == "decode" and "decoding" or "communicating")))
    w(string.format('<h2>%d. %s<span class="phase %s">%s</span></h2><p>%s</p>', i, esc(st.title), st.phase,
      st.phase:upper(), esc(st.text)))
    if st.colls and #st.colls > 0 then
      w('<div class="scroll"><table class="colls"><thead><tr><th>collective</th><th>primitive</th><th class="num">ranks</th><th class="num">HBDs' ..
        '</th><th>network</th><th class="num">bytes/call</th><th class="num">time/call</th><th class="num">' ..
        (st.phase == "decode" and "calls/step" or "calls/pass") .. '</th></tr></thead><tbody>')
      for _, x in ipairs(st.colls) do
        local it = x.row
        w(string.format('<tr data-row="%s/%s"><td>%s</td><td>%s</td>', st.phase, esc(it.name), esc(it.name),
          esc(prim_name[it.op] or it.op)))
        w(td(it.ranks, string.format("%d", it.ranks), "ranks") .. td(it.hbds, string.format("%d", it.hbds), "hbds"))
        w(it.hbds > 1 and '<td class="cross">crosses HBD</td>' or '<td class="inhbd">in HBD</td>')
        w(td(it.call_bytes, bytes(it.call_bytes), "call_bytes") .. td(it.call_time_s, ms(it.call_time_s), "call_time_s")
          .. td(x.calls, string.format("%.6g", x.calls), "calls") .. '</tr>')
      end
      w('</tbody></table></div>')
    end
    w('<div class="metrics">')
    if st.compute_s > 0 then
      w('<div class="metric">operators<b data-field="compute_s" data-v="' .. exact(st.compute_s) .. '">' ..
        esc(ms(st.compute_s)) .. '</b></div>')
    end
    if st.comm_s > 0 then
      w('<div class="metric">collectives (calls x time)<b data-field="comm_s" data-v="' .. exact(st.comm_s) .. '">' ..
        esc(ms(st.comm_s)) .. '</b></div>')
    end
    if st.phase == "prefill" then
      w('<div class="metric">steps so far (no overlap, no pipelining)<b data-field="elapsed_s" data-v="' .. exact(st.elapsed_s) ..
        '">' .. esc(ms(st.elapsed_s)) .. '</b></div>')
    end
    if st.ttft or st.tpot then
      w('<div class="metric">TTFT (simulator)<b data-field="ttft_s" data-v="' .. exact(r.ttft_s) .. '">' ..
        esc(ms(r.ttft_s)) .. '</b></div>')
    else
      w('<div class="metric">TTFT (simulator)<b>after sampling</b></div>')
    end
    if st.tpot then
      w('<div class="metric">TPOT (simulator)<b data-field="tpot_s" data-v="' .. exact(r.tpot_s) .. '">' ..
        esc(ms(r.tpot_s)) .. '</b></div>')
    end
    w('</div>')
    if st.unmodelled then w('<p class="note">Primitive: Broadcast in a real engine; 0 bytes counted.</p>') end
    w('<div class="kv"><b>KV cache per GPU</b>')
    for s = 0, p.pp - 1 do
      local tok = (s < st.stages_done) and st.kv_tokens or 0
      local kvb = kv_full * tok / ctx
      w(string.format('<div class="kvrow"><span>stage %d</span><div class="kvtrack"><i class="kvw" style="width:%.2f%%">' ..
        '</i><i class="kvk" style="width:%.2f%%"></i></div><span data-field="kv_bytes" data-v="%s">%s KV (%d ' ..
        'tokens/seq) + %s weights of %s</span></div>', s + 1, wfrac * 100, math.min(kvb / hbm, 1 - wfrac) * 100,
        exact(kvb), esc(bytes(kvb)), tok, esc(bytes(r.memory.weights_bytes)), esc(bytes(hbm))))
    end
    w('</div></div>')
  end
  w('<p class="note">Prefill counts are per pass of a stage over the batch, decode counts per step. "Before ' ..
    'overlap" sums operators and calls x time per call (x the pipeline-fill factor); the simulator\'s TTFT and ' ..
    'TPOT overlap communication with compute and add the framework\'s fixed costs (docs/MODEL.md).</p></section>')
  -- primitives
  w('<section class="card"><h2>The nine collective primitives</h2><p class="note">Blue: used by this job; red: ' ..
    'used in the current step.</p><div class="prims">')
  for _, pr in ipairs(primitives) do
    w(string.format('<div class="prim%s" data-op="%s"><b>%s</b>%s<code>%s</code>%s</div>', used[pr[1]] and " used" or "",
      pr[1], esc(pr[2]), used[pr[1]] and " &#183; used" or "", esc(pr[3]), esc(pr[4])))
  end
  w('</div></section>')
  -- requirements
  w('<section class="card"><h2>Network needed to keep communication under ' .. string.format("%.0f", share * 100) ..
    '% of step time</h2><table class="req"><thead><tr><th>traffic</th><th>tier</th><th class="num">count</th><th class="num">' ..
    'bytes each</th><th class="num">sent each</th><th class="num">compute</th><th class="num">bandwidth</th>' ..
    '<th class="num">max latency</th></tr></thead><tbody>')
  for _, q in ipairs(requirements(r, share)) do
    w(string.format('<tr data-req="%s|%s"><td>%s</td><td>%s</td>', esc(q[1]), q[2], esc(q[1]), q[2]))
    w(td(q[3], string.format("%.6g", q[3]), "count") .. td(q[4], bytes(q[4]), "bytes") .. td(q[5], bytes(q[5]), "sent") ..
      td(q[6], ms(q[6]), "compute_s") .. td(q[7], q[7] == math.huge and "none suffices" or string.format("%.1f GB/s", q[7] / 1e9), "bandwidth") ..
      td(q[8], string.format("%.1f us", q[8] * 1e6), "max_latency_s") .. '</tr>')
  end
  w('</tbody></table><p class="note">hl.net_requirement fed with the rows above: per call its bytes, the bytes ' ..
    'it sends on the tier, its latency part; the calls per step; the compute of one step. "none suffices": the ' ..
    'calls\' fixed latency alone exceeds the budget.</p></section>')
  w('</main><footer>Generated by hl.walkthrough (hbdlab ' .. esc(core.version()) .. '). Self-contained: no ' ..
    'network access.</footer><script>' .. JS .. '</script></body></html>\n')
  return table.concat(o, "\n") -- a line per block: diffs of the committed examples stay readable
end

--- hl.walkthrough(r | job, path [, opts]) -> path. r: an hl.simulate result (its job is remembered), or the
--- simulate fields to run. opts: { share = 0.10, title = "..." }.
function M.walkthrough(x, path, opts)
  if type(x) ~= "table" then error("hl.walkthrough: expected a simulate result or a table of simulate fields", 2) end
  -- the options are checked here, by name: a misspelt one is not ignored, a bad share is not
  -- reported by hl.net_requirement as a positional list of numbers
  if opts ~= nil then
    if type(opts) ~= "table" then error("hl.walkthrough: opts must be a table {share =, title =}", 2) end
    local ok, e = pcall(core.check_fields, opts, { "share", "title" }, "hl.walkthrough opts")
    if not ok then error((tostring(e):gsub("^hbdlab/[%w_]+%.lua:%d+: ", "")), 2) end
    local sh = opts.share
    if sh ~= nil and (type(sh) ~= "number" or not (sh > 0 and sh < 1)) then
      error("hl.walkthrough: opts field 'share': " .. tostring(sh) .. " is not allowed (a fraction in (0, 1) of the step time)", 2)
    end
    if opts.title ~= nil and type(opts.title) ~= "string" then
      error("hl.walkthrough: opts field 'title': expected a string, got " .. type(opts.title), 2)
    end
  end
  if path ~= nil and type(path) ~= "string" then error("hl.walkthrough: path must be a file name (.html)", 2) end
  local sim = require "hbdlab.simulate"
  local r, job = x, sim.job_of[x]
  -- a serving result or configuration is not one job: say so, instead of "field 'model' ... got nil"
  -- or "unknown field 'rate'" from hl.simulate
  local serving = "hl.walkthrough explains one hl.simulate job (its step's operators and collectives)"
  if not job and require("hbdlab.serve").is_result(x) then
    error(serving .. "; this is a result of hl.serve: give the instance's simulate fields instead " ..
      "(model, cluster, parallel, precision, batch, input, output)", 2)
  end
  if not job then
    for _, f in ipairs(core.fields("serve")) do
      if x[f.name] ~= nil and f.name ~= "input" and f.name ~= "output" then
        error(string.format("%s; field '%s' is a serving field (hl.serve): give the instance's simulate fields " ..
          "only (model, cluster, parallel, precision, batch, input, output)", serving, f.name), 2)
      end
    end
  end
  if not job then
    job = objects.coerce_job(x)
    r = sim.simulate(x)
  end
  local html = M.html(r, job, opts)
  if path == nil then return html end
  require("hbdlab.rows").write_atomic(path, html)
  local made = require("hbdlab.plot").made -- a notebook cell embeds the pages it wrote, like its figures
  made[#made + 1] = path
  return path
end

return M
