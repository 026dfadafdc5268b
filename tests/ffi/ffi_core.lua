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
  local tpot = r.tpot_s
  check(lib.hl_kv_bytes_per_token(m, lib.HL_BF16) == 131072, "KV bytes per token of Llama-3.1-8B")
  job.tp = 3 -- an invalid mapping reports an error through the buffer
  check(lib.hl_sim_run(job, r, err) == lib.HL_EINVAL, "invalid tp")
  check(ffi.string(err.msg):find("tp = 3 does not divide 32 heads", 1, true), ffi.string(err.msg))
  -- the collective rows read through the FFI (struct layout agrees with C): TP2 on 2 GPUs, batch 1,
  -- 199 decode steps: the TP AllReduce is S = 1 * 4096 * 2 = 8192 B, 2 per layer x 32 x 199 = 12736 calls
  check(lib.hl_cluster_init(c, g, 2, 2, err) == 0, ffi.string(err.msg))
  lib.hl_job_init(job, m, c)
  job.batch, job.input, job.output, job.tp = 1, 1000, 200, 2
  check(lib.hl_sim_run(job, r, err) == 0, ffi.string(err.msg))
  local ar
  for i = 0, r.n_decode_items - 1 do
    if ffi.string(r.decode_items[i].name) == "tp_allreduce" then ar = r.decode_items[i] end
  end
  check(ar and ar.call_bytes == 8192 and ar.calls == 12736 and ar.ranks == 2 and ar.op == lib.HL_ALLREDUCE,
    "tp_allreduce row through the FFI")
  -- a sweep streamed to a CSV file through the FFI (hl_sweep_csv_file): batch {1, 2} x input
  -- {100, 200, 300}, columns ttft_s and tpot_s: a header and 6 rows of 2 + 2 + 1 cells
  local ax = ffi.new("hl_axis[2]")
  local batches, inputs = ffi.new("double[2]", { 1, 2 }), ffi.new("double[3]", { 100, 200, 300 })
  ffi.copy(ax[0].name, "batch")
  ax[0].kind, ax[0].n, ax[0].numbers = lib.HL_AXIS_NUMBER, 2, batches
  ffi.copy(ax[1].name, "input")
  ax[1].kind, ax[1].n, ax[1].numbers = lib.HL_AXIS_NUMBER, 3, inputs
  local sin = ffi.new("hl_sweep_in")
  sin.base = job
  sin.axes, sin.n_axes = ax, 2
  local o = ffi.new("hl_sweep_csv_opts")
  local cols = ffi.new("int32_t[2]", { lib.hl_result_field_index("ttft_s"), lib.hl_result_field_index("tpot_s") })
  o.columns, o.n_columns = cols, 2
  local rows = ffi.new("int64_t[1]")
  local path = os.tmpname()
  check(lib.hl_sweep_csv_file(sin, o, path, rows, err) == 0, ffi.string(err.msg))
  local fh = assert(io.open(path, "rb"))
  local text = fh:read("*a")
  fh:close()
  os.remove(path)
  local lines = {}
  for l in text:gmatch("[^\n]+") do lines[#lines + 1] = l end
  check(tonumber(rows[0]) == 6 and #lines == 7, "sweep csv through the FFI: " .. tonumber(rows[0]) .. " rows")
  check(lines[1] == "batch,input,ttft_s,tpot_s,error", "header: " .. lines[1])
  check(lines[2]:match("^1,100,[%d.e+-]+,[%d.e+-]+,$") and lines[7]:match("^2,300,"), "rows: " .. lines[2] .. " / " .. lines[7])
  -- attack pass 4: a string member filled to its end with no NUL (only C or an FFI can) was read past
  -- the member: `kernels` of 256 'A's named a folder of those bytes and the next fields' ("AAAA...A\xF0@")
  ffi.fill(job.kernels, ffi.sizeof(job.kernels), 65)
  check(lib.hl_sim_run(job, r, err) == lib.HL_EINVAL and
    ffi.string(err.msg) == "job field 'kernels': no NUL byte within its 256 bytes (a C string is expected)",
    "unterminated kernels: " .. ffi.string(err.msg))
  ffi.fill(job.kernels, ffi.sizeof(job.kernels), 0)
  ffi.fill(job.model.name, ffi.sizeof(job.model.name), 66)
  check(lib.hl_sim_run(job, r, err) == lib.HL_EINVAL and
    ffi.string(err.msg):find("model field 'name': no NUL byte within its 64 bytes", 1, true),
    "unterminated model name: " .. ffi.string(err.msg))
  -- attack pass 5: the draft model's flag spec_draft, with no descriptor row, ran 7 and -1 as 1
  -- (a draft of the target's own model), where every boolean field refuses them
  check(lib.hl_cluster_init(c, g, 1, 1, err) == 0, ffi.string(err.msg))
  lib.hl_job_init(job, m, c)
  job.batch, job.input, job.output = 1, 100, 20
  job.spec_tokens, job.spec_accept, job.spec_draft_layers = 3, 0.8, 0
  job.spec_draft_model = m
  job.spec_draft = 7
  check(lib.hl_sim_run(job, r, err) == lib.HL_EINVAL and
    ffi.string(err.msg):find("job field 'spec_draft': 7 is not a boolean (0 or 1", 1, true),
    "spec_draft = 7: " .. ffi.string(err.msg))
  job.spec_draft = 1
  check(lib.hl_sim_run(job, r, err) == 0, ffi.string(err.msg))
  -- a per-position vector set in C with a NaN entry: "nan" (it printed "-nan")
  job.spec_draft = 0
  job.spec_accept, job.spec_accept_n = 0, 3
  job.spec_accept_pos[0], job.spec_accept_pos[1], job.spec_accept_pos[2] = 0.9, -(0 / 0), 0.5
  check(lib.hl_sim_run(job, r, err) == lib.HL_EINVAL and
    ffi.string(err.msg) == "field 'spec_accept': entry 2 is nan (allowed: 0 < p <= 1)",
    "spec_accept_pos NaN: " .. ffi.string(err.msg))
  -- attack pass 7: a nil is a NULL through the FFI; these crashed the process (SIGSEGV)
  check(lib.hl_sim_run(nil, r, err) == lib.HL_EINVAL and ffi.string(err.msg) == "hl_sim_run: the job is NULL",
    "hl_sim_run(nil): " .. ffi.string(err.msg))
  check(lib.hl_serve_run(nil, nil, err) == lib.HL_EINVAL, "hl_serve_run(nil): " .. ffi.string(err.msg))
  check(lib.hl_coll_time(nil, nil, nil, err) == lib.HL_EINVAL, "hl_coll_time(nil): " .. ffi.string(err.msg))
  check(lib.hl_field_find(lib.hl_gpu_fields(), nil) == nil, "hl_field_find(set, nil) is NULL")
  print(string.format("ffi sim: TPOT %.3f ms (weights/bandwidth %.3f ms)", tpot * 1e3, floor * 1e3))
end
