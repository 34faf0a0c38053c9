-- billing.lua -- a wrk script that posts invoices to billingd and counts
-- the 201s, so billingd is checked against a client nobody here wrote.
--
--   wrk -t2 -c8 -d5s -s billing.lua http://127.0.0.1:PORT/ -- BUDGET
--
-- Each thread posts at most BUDGET invoices (default 1000), then only
-- reads /healthz: when wrk stops at the end of -d, the requests it drops
-- in flight are reads, so every invoice billingd stored had its 201 seen
-- here.  Each wrk thread runs its own Lua state: done() sums the threads'
-- counters through thread:get().

local threads = {}

function setup(thread)
   table.insert(threads, thread)
   thread:set("thread_no", #threads)
end

function init(args)
   budget = tonumber(args[1]) or 1000
   posted, created, health, other = 0, 0, 0, 0
end

function request()
   if posted < budget then
      posted = posted + 1
      local body = string.format(
         '{"customer_id":%d,"amount_minor":%d,"currency":"EUR"}',
         thread_no * 1000000 + posted, 100 + posted)
      return wrk.format("POST", "/invoices",
                        { ["Content-Type"] = "application/json" }, body)
   end
   return wrk.format("GET", "/healthz")
end

function response(status, headers, body)
   if status == 201 then
      created = created + 1
   elseif status == 200 then
      health = health + 1
   else
      other = other + 1
   end
end

function done(summary, latency, requests)
   local c, p, h, o = 0, 0, 0, 0
   for _, t in ipairs(threads) do
      c = c + t:get("created")
      p = p + t:get("posted")
      h = h + t:get("health")
      o = o + t:get("other")
   end
   local e = summary.errors
   io.write(string.format(
      "wrk-result created=%d posted=%d health=%d other=%d connect=%d read=%d write=%d status=%d timeout=%d\n",
      c, p, h, o, e.connect, e.read, e.write, e.status, e.timeout))
end
