-- wrk script: POST distinct postbacks from a file (one JSON body per line, made by `countersign simulate --out`).
-- Each wrk thread takes every Nth line, so no two threads send the same postback.
local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

function init(args)
  local file = args[1]
  local total = tonumber(args[2])
  bodies = {}
  local line_number = 0
  for line in io.lines(file) do
    if line_number % total == id then table.insert(bodies, line) end
    line_number = line_number + 1
  end
  index = 0
  non_ok = 0
  server_errors = 0
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  index = index + 1
  if index > #bodies then index = 1 end
  return wrk.format("POST", "/postbacks", nil, bodies[index])
end

function response(status, headers, body)
  if status ~= 200 then non_ok = non_ok + 1 end
  if status >= 500 then server_errors = server_errors + 1 end
end

function done(summary, latency, requests)
  local bad, failed = 0, 0
  for _, thread in ipairs(threads) do
    bad = bad + (thread:get("non_ok") or 0)
    failed = failed + (thread:get("server_errors") or 0)
  end
  io.write(string.format("requests=%d duration_s=%.3f p50_ms=%.3f p99_ms=%.3f non_200=%d server_errors=%d socket_errors=%d\n",
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1000, latency:percentile(99) / 1000, bad, failed,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
