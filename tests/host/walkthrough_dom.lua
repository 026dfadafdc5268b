-- Checks a walkthrough page's DOM (as Chromium dumped it) against hl.simulate:
--   hbdlab tests/host/walkthrough_dom.lua DOM.html CASE_INDEX [GOLDEN.out]
-- CASE_INDEX picks a job of scripts/walkthrough_pages.lua. Every collective row on the page
-- must carry the simulator's ranks, HBDs, bytes, time per call and calls (exactly: the page
-- writes them with %.17g) and show them as text; every collective the simulator counted must
-- appear; TTFT and TPOT must be the result's. With GOLDEN (the script's printed output), the
-- requirement table's bandwidth and latency must read as scripts/walkthrough_tp2pp2.lua prints them.
local hl = require "hbdlab"
local dom_path, index, golden = arg[1], tonumber(arg[2]), arg[3]
local function read(p) local f = assert(io.open(p, "rb")); local t = f:read("a"); f:close(); return t end
local dom = read(dom_path)
local cases = assert(loadfile("scripts/walkthrough_pages.lua"))("cases")
local job = cases[index].job
hl.warnings(false)
local r = hl.simulate(job)
local bad = 0
local function check(ok, msg) if not ok then bad = bad + 1; io.stderr:write("FAIL: ", msg, "\n") end end
local si = require("hbdlab.objects").si
local function unesc(s) return (s:gsub("&lt;", "<"):gsub("&gt;", ">"):gsub("&quot;", '"'):gsub("&#39;", "'"):gsub("&amp;", "&")) end

-- the collective rows
local seen, nrows = {}, 0
for phase, name, body in dom:gmatch('<tr data%-row="(%a+)/([%w_]+)">(.-)</tr>') do
  nrows = nrows + 1
  local row
  for _, it in ipairs(r[phase].breakdown) do if it.name == name then row = it end end
  check(row ~= nil, phase .. "/" .. name .. " is on the page but not in the simulator's rows")
  if row then
    seen[phase .. "/" .. name] = true
    local per = phase == "decode" and (r.output - 1) or 1
    local want = { ranks = row.ranks, hbds = row.hbds, call_bytes = row.call_bytes, call_time_s = row.call_time_s,
                   calls = row.calls / per }
    local text = { ranks = string.format("%d", row.ranks), hbds = string.format("%d", row.hbds),
                   call_bytes = si(row.call_bytes, "B"), call_time_s = math.abs(row.call_time_s) < 1e-5 and row.call_time_s ~= 0 and
                     string.format("%.2f us", row.call_time_s * 1e6) or string.format("%.3f ms", row.call_time_s * 1e3),
                   calls = string.format("%.6g", row.calls / per) }
    local got = 0
    for field, v, shown in body:gmatch('data%-field="([%w_]+)" data%-v="([^"]+)">([^<]*)<') do
      got = got + 1
      check(tonumber(v) == want[field], string.format("%s/%s %s: page %s, simulator %.17g", phase, name, field, v,
        want[field] or 0 / 0))
      check(unesc(shown) == text[field], string.format("%s/%s %s shown as '%s', expected '%s'", phase, name, field,
        unesc(shown), tostring(text[field])))
    end
    check(got == 5, phase .. "/" .. name .. ": 5 numbers expected, found " .. got)
  end
end
for _, phase in ipairs { "prefill", "decode" } do
  for _, it in ipairs(r[phase].breakdown) do
    if it.kind == "comm" then check(seen[phase .. "/" .. it.name], phase .. "/" .. it.name .. " is not on the page") end
  end
end
for field, v in dom:gmatch('data%-field="(t[tp]%a+_s)" data%-v="([^"]+)"') do
  check(tonumber(v) == r[field], field .. " on the page " .. v .. " ~= " .. string.format("%.17g", r[field]))
end
check(dom:find('data-field="ttft_s"', 1, true) and (r.output == 1 or dom:find('data-field="tpot_s"', 1, true)),
  "TTFT and TPOT are on the page")
-- the requirement rows, as the script prints them
local nreq = 0
if golden then
  local text = read(golden)
  for name, tier, body in dom:gmatch('<tr data%-req="([^|]+)|([%w-]+)">(.-)</tr>') do
    local bw = body:match('data%-field="bandwidth" data%-v="[^"]+">([^<]*)<')
    local lat = body:match('data%-field="max_latency_s" data%-v="[^"]+">([^<]*)<')
    local key = unesc(name):match("^(%u+ %a+)") -- "TP prefill", "TP decode", "PP (Send" -> "PP"
    key = key or unesc(name):match("^(%u+)")
    local found = false
    for line in text:gmatch("[^\n]+") do
      if line:find(key, 1, true) == 1 and line:find(tier, 1, true) and line:find(bw, 1, true) and
         line:find(lat:gsub(" us$", ""), 1, true) then found = true end
    end
    check(found, string.format("requirement '%s' %s: %s, %s not in the script's output", unesc(name), tier, bw, lat))
    nreq = nreq + 1
  end
  check(nreq >= 3, "requirement rows compared with the script: " .. nreq)
end
print(string.format("%d collective rows, %d requirement rows checked, %d failures", nrows, nreq, bad))
os.exit(bad == 0 and 0 or 1)
