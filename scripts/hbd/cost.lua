-- Is a larger HBD worth its price and power? The article's study (128 or 64
-- B200, Qwen 110B + 16 experts, batch 16, 32K input) priced per token: USD per
-- million tokens and joules per token vs HBD size, per precision.
--
-- Every price is an ESTIMATE (sources in core/presets/gpus/b200.json
-- "cost_source" and docs/MODEL.md section 11); the per-GPU price of the
-- scale-up fabric grows with the HBD (scaleup_usd below). Because that price
-- is the least known, the script also prints the break-even scale-up price:
-- the most a GPU's share of an HBD of N may cost before N is dearer per token
-- than HBD 8 (cost per token is linear in it, so two runs give it exactly).
local here = (arg and arg[0] or "scripts/hbd/cost.lua"):match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path
local S = require "study"
local P = hl.params {
  gpus = { 128, "cluster size (64 or 128, the article's two)" },
  out = { "plots/out/hbd", "folder for the charts" },
  usd_per_kwh = { 0.08, "electricity price (EIA US industrial 2023 average 8.06 c/kWh)" },
  pue = { 1.3, "power usage effectiveness (Uptime Institute: new large sites 1.3 or better)" },
  amort_years = { 5, "capex amortisation period" },
  scaleup_board_usd = { 3000, "per-GPU scale-up price when the HBD is one 8-GPU board (HGX NVSwitch baseboard share, estimate)" },
  scaleup_rack_usd = { 6000, "per-GPU scale-up price for a rack-scale HBD up to 72 (NVL72 switch-tray share, estimate)" },
  scaleup_multi_usd = { 9000, "per-GPU scale-up price beyond one rack (a second switch tier, 1.5x the rack share; estimate)" },
  quiet = { false, "print the table only" },
}
if not S.sizes[P.gpus] then error("cost.lua: gpus must be 64 or 128, got " .. tostring(P.gpus), 0) end

local function scaleup_usd(hbd)
  if hbd <= 8 then return P.scaleup_board_usd end
  if hbd <= 72 then return P.scaleup_rack_usd end
  return P.scaleup_multi_usd
end

local v = S.values()
local function run(hbd, prec, su)
  local job = S.job(v, P.gpus, hbd, prec)
  job.cluster = job.cluster:with { scaleup_usd = su, pue = P.pue, usd_per_kwh = P.usd_per_kwh,
                                   amort_years = P.amort_years }
  return hl.simulate(job)
end

local rows = {}
for _, prec in ipairs(S.precisions) do
  local base
  for _, hbd in ipairs(S.sizes[P.gpus]) do
    local su = scaleup_usd(hbd)
    local r = run(hbd, prec, su)
    local r0 = run(hbd, prec, 0)
    base = base or r
    -- usd_per_mtok = a + b * scaleup_usd: break-even where it equals HBD 8's
    local slope = (r.usd_per_mtok - r0.usd_per_mtok) / su
    rows[#rows + 1] = {
      precision = prec, hbd = hbd, scaleup_usd = su,
      usd_per_mtok = r.usd_per_mtok, usd_per_mtok_in = r.usd_per_mtok_in, usd_per_mtok_out = r.usd_per_mtok_out,
      joules_per_token = r.joules_per_token, power_kw = r.power_w / 1e3, tps_per_gpu = r.tps_per_gpu,
      cost_vs_hbd8 = r.usd_per_mtok / base.usd_per_mtok,
      breakeven_scaleup_usd = hbd == 8 and su or (base.usd_per_mtok - r0.usd_per_mtok) / slope,
    }
  end
end

if not P.quiet then
  print(string.format("%d x B200, Qwen1.5-110B + 16 experts, batch %d, input %d, output %d; " ..
    "%.2f USD/kWh, PUE %.2f, %g-year amortisation (estimates: docs/MODEL.md section 11)",
    P.gpus, v.batch, v.input, v.output, P.usd_per_kwh, P.pue, P.amort_years))
end
hl.rows.print(rows, { "precision", "hbd", "scaleup_usd", "usd_per_mtok", "usd_per_mtok_in", "usd_per_mtok_out",
  "joules_per_token", "power_kw", "cost_vs_hbd8", "breakeven_scaleup_usd" })

local xt = S.sizes[P.gpus]
hl.plot.line { data = rows, x = "hbd", y = "usd_per_mtok", by = "precision", logx = 2, xtics = xt,
  title = string.format("Cost per million generated tokens vs HBD size, %d x B200 (estimated prices)", P.gpus),
  xlabel = "HBD size (GPUs)", ylabel = "USD per million generated tokens", out = P.out .. "/cost_usd_per_mtok.png" }
hl.plot.line { data = rows, x = "hbd", y = "joules_per_token", by = "precision", logx = 2, xtics = xt,
  title = string.format("Energy per generated token vs HBD size, %d x B200 (PUE %.2f)", P.gpus, P.pue),
  xlabel = "HBD size (GPUs)", ylabel = "J per generated token", out = P.out .. "/cost_joules_per_token.png" }
hl.plot.line { data = hl.rows.filter(rows, function(r) return r.hbd > 8 end), x = "hbd",
  y = "breakeven_scaleup_usd", by = "precision", logx = 2, xtics = xt,
  title = "Most a GPU's share of the HBD fabric may cost before HBD N is dearer per token than HBD 8",
  xlabel = "HBD size (GPUs)", ylabel = "break-even scale-up USD per GPU", out = P.out .. "/cost_breakeven.png" }
if not P.quiet then
  print("charts: " .. P.out .. "/cost_usd_per_mtok.png, cost_joules_per_token.png, cost_breakeven.png")
end
return rows
