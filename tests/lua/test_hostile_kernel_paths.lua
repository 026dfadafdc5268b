-- Attack pass 5 (docs/RELIABILITY.md): the kernel-folder cache keys folders by their canonical
-- path. "dir", "dir/" and "./dir" were three folders of the 16 a process caches, so a script
-- naming one folder in 17 ways was refused ("would be the 17th kernel folder").
local T = require "testlib"
local hl = require "hbdlab"

local root, file = T.scratch()
assert(os.execute("mkdir -p '" .. root .. "/d'"))
-- M = 16 is half way from 4 to 64 in log space: sqrt(20 x 40) us = 28.28 us
file("d/gemm.csv", "dtype,m,n,k,latency_ms\nbfloat16,4,6144,4096,0.020\nbfloat16,64,6144,4096,0.040\n")
assert(os.execute("ln -s '" .. root .. "/d' '" .. root .. "/link'"))
local function gemm(d) return hl.roofline { gpu = "H100-SXM", m = 16, n = 6144, k = 4096, kernels = d } end

T.test("one folder named in 20 ways is one folder of the cache", function()
  local names = { root .. "/d", root .. "/d/", root .. "//d", root .. "/./d", root .. "/d/.", root .. "/link",
                  root .. "/link/", root .. "/d/../d", root .. "/link/../d" }
  for i = 1, 11 do names[#names + 1] = root .. string.rep("/", i + 2) .. "d" end
  for _, d in ipairs(names) do
    T.near(gemm(d).time_s, math.sqrt(20e-6 * 40e-6), 1e-9, d)
  end
  -- fifteen other folders still fit beside it (16 in all)
  for i = 1, 15 do
    local o = root .. "/o" .. i
    assert(os.execute("cp -r '" .. root .. "/d' '" .. o .. "'"))
    T.near(gemm(o).time_s, math.sqrt(20e-6 * 40e-6), 1e-9, o)
  end
  T.raises(function()
    assert(os.execute("cp -r '" .. root .. "/d' '" .. root .. "/o16'"))
    gemm(root .. "/o16")
  end, "would be the 17th kernel folder of this process (at most 16 are cached)")
end)

os.execute("rm -rf '" .. root .. "'")
T.done()
