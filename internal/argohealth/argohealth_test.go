package argohealth

import "testing"

func TestRun(t *testing.T) {
	obj := map[string]any{"metadata": map[string]any{"generation": int64(2)},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}
	h, err := Run(`local hs = {}
if obj.metadata.generation == 2 and obj.status.conditions[1].type == "Ready" then
  hs.status = "Healthy"; hs.message = string.upper("ok")
end
return hs`, obj)
	if err != nil || h.Status != "Healthy" || h.Message != "OK" {
		t.Fatalf("%+v %v", h, err)
	}
	for script, why := range map[string]string{
		`return 1`:                         "a number, not a table",
		`return {status = "Fine"}`:         "not one of Argo CD's statuses",
		`return {status = os.getenv("X")}`: "os is not opened, as in Argo CD",
		`this is not Lua`:                  "a syntax error",
	} {
		if h, err := Run(script, obj); err == nil {
			t.Errorf("%s: accepted (%+v)", why, h)
		}
	}
}
