-- Argo CD health check of summa.dev/SummaIndex, read from the conditions
-- the operator keeps (docs/api.md, "Conditions"):
--   Progressing  the operator has not seen this generation of the spec
--                yet (a change may be what unblocks a Stalled index)
--   Degraded     Stalled=True: progress is blocked until a person acts
--   Progressing  Reconciling=True (creating, draining, restarting, a
--                doctor run, a resize, a failure it retries)
--   Suspended    spec.suspend, once the engine is stopped
--   Healthy      Ready=True and nothing in progress
--   Progressing  otherwise (Ready=False without a reason to give up)
local hs = {}

local function condition(t)
  if obj.status ~= nil and obj.status.conditions ~= nil then
    for _, c in ipairs(obj.status.conditions) do
      if c.type == t then
        return c
      end
    end
  end
  return nil
end

local function say(c, fallback)
  if c ~= nil and c.message ~= nil and c.message ~= "" then
    return c.message
  end
  if c ~= nil and c.reason ~= nil and c.reason ~= "" then
    return c.reason
  end
  return fallback
end

if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "Being deleted"
  return hs
end

local generation = 0
if obj.metadata ~= nil and obj.metadata.generation ~= nil then
  generation = obj.metadata.generation
end
local observed = 0
if obj.status ~= nil and obj.status.observedGeneration ~= nil then
  observed = obj.status.observedGeneration
end
if observed < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to reconcile generation " .. tostring(generation)
  return hs
end

local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = (stalled.reason or "Stalled") .. ": " .. say(stalled, "progress is blocked")
  return hs
end

local reconciling = condition("Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  hs.status = "Progressing"
  hs.message = say(reconciling, "Reconciling")
  return hs
end

if obj.spec ~= nil and obj.spec.suspend == true then
  hs.status = "Suspended"
  hs.message = "spec.suspend is set: the engine is stopped, the volume kept"
  return hs
end

local ready = condition("Ready")
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = say(ready, "Ready")
  return hs
end

hs.status = "Progressing"
hs.message = say(ready, "Waiting for the engine to be ready")
return hs
