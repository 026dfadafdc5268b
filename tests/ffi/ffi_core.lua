-- Loaded by test_ffi.lua: a whole simulation through the FFI (presets, a
-- cluster, a job, hl_sim_run), compared with known properties of the result.
return function(ffi, lib, check)
  local err = ffi.new("hl_err")
  local m = ffi.new("hl_model")
  local g = ffi.new("hl_gpu")
  local c = ffi.new("hl_cluster")
  check(lib.hl_model_preset("llama-3.1-8b", m, err) == 0, ffi.string(err.msg))
  check(lib.hl_gpu_preset("H100-SXM", g, err) == 0, ffi.string(err.msg))
  check(lib.hl_cluster_init(c, g, 1, 1, err) == 0, ffi.string(err.msg))
  local job = ffi.new("hl_job")
  lib.hl_job_init(job, m, c)
  job.batch, job.input, job.output = 1, 1000, 200
  local r = ffi.new("hl_result")
  check(lib.hl_sim_run(job, r, err) == 0, ffi.string(err.msg))
  local p = ffi.new("hl_params")
  check(lib.hl_model_params(m, p, err) == 0, ffi.string(err.msg))
  local floor = p.total * 2 / 3.35e12
  check(r.tpot_s >= floor and r.tpot_s <= 1.5 * floor, "TPOT within [1, 1.5] x weights/bandwidth")
  check(lib.hl_kv_bytes_per_token(m, lib.HL_BF16) == 131072, "KV bytes per token of Llama-3.1-8B")
  job.tp = 3 -- an invalid mapping reports an error through the buffer
  check(lib.hl_sim_run(job, r, err) == lib.HL_EINVAL, "invalid tp")
  check(ffi.string(err.msg):find("tp = 3 does not divide 32 heads", 1, true), ffi.string(err.msg))
  print(string.format("ffi sim: TPOT %.3f ms (weights/bandwidth %.3f ms)", r.tpot_s * 1e3, floor * 1e3))
end
