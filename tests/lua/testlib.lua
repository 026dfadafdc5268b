-- Minimal test harness for tests/lua: T.test(name, fn), checks, and T.done()
-- which prints "N passed, N failed" and exits non-zero on any failure.
local T = { passed = 0, failed = 0 }

local function fail(msg, level)
  error(msg, (level or 1) + 1)
end

function T.test(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    T.passed = T.passed + 1
  else
    T.failed = T.failed + 1
    io.stderr:write("FAIL ", name, "\n", tostring(err), "\n")
  end
end

function T.eq(got, want, label)
  if got ~= want then
    fail(string.format("%s: got %s, want %s", label or "eq", tostring(got), tostring(want)), 2)
  end
end

function T.ok(cond, label)
  if not cond then fail((label or "ok") .. ": condition is false", 2) end
end

--- Relative closeness: |got - want| <= rel * |want| (absolute when want == 0).
function T.near(got, want, rel, label)
  local tol = want == 0 and rel or rel * math.abs(want)
  if type(got) ~= "number" or math.abs(got - want) > tol then
    fail(string.format("%s: got %.12g, want %.12g (rel tol %g)", label or "near", got or 0/0, want, rel), 2)
  end
end

--- fn must raise an error whose message contains each plain substring given.
function T.raises(fn, ...)
  local ok, err = pcall(fn)
  if ok then fail("expected an error, none raised", 2) end
  err = tostring(err)
  for i = 1, select("#", ...) do
    local s = select(i, ...)
    if not err:find(s, 1, true) then
      fail(string.format("error %q does not contain %q", err, s), 2)
    end
  end
  return err
end

-- A shallow copy of base with the fields of changes set over it (neither argument is modified):
-- the usual "base job with these fields changed" of a test file. With `drop` given, a change
-- equal to it removes the field instead (the serve tests pass false to unset a base field).
function T.merged(base, changes, drop)
  local o = {}
  for k, v in pairs(base) do o[k] = v end
  for k, v in pairs(changes) do
    if drop ~= nil and v == drop then o[k] = nil else o[k] = v end
  end
  return o
end

-- A fresh folder for a test file's inputs, and file(name, text) -> path writing one file in it.
function T.scratch()
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p '" .. dir .. "'"))
  local function file(name, text)
    local p = dir .. "/" .. name
    local f = assert(io.open(p, "wb"))
    f:write(text)
    f:close()
    return p
  end
  return dir, file
end

function T.done()
  print(string.format("%d passed, %d failed", T.passed, T.failed))
  os.exit(T.failed == 0 and 0 or 1)
end

return T
