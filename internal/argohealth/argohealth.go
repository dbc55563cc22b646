// Package argohealth runs an Argo CD resource health check (a Lua script,
// as Argo CD's resource.customizations.health.<group>_<kind>) the way
// Argo CD runs it: gopher-lua, the interpreter Argo CD embeds, with only
// the base, table, string and math libraries, the resource as the global
// obj, and the table the script returns as the verdict. The tests of
// config/argocd/health.lua use it.
package argohealth

import (
	"encoding/json"
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// Health is a verdict of a health check.
type Health struct {
	// Status is one of Argo CD's health statuses: Healthy, Progressing,
	// Degraded, Suspended, Missing, Unknown.
	Status string
	// Message says why.
	Message string
}

// Run runs script over obj (a resource as JSON decodes it).
func Run(script string, obj map[string]any) (Health, error) {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		if err := L.CallByParam(lua.P{Fn: L.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return Health{}, err
		}
	}
	v, err := toLua(L, obj)
	if err != nil {
		return Health{}, err
	}
	L.SetGlobal("obj", v)
	if err := L.DoString(script); err != nil {
		return Health{}, err
	}
	ret, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return Health{}, fmt.Errorf("the script returned %s, not a table", L.Get(-1).Type())
	}
	h := Health{Status: lua.LVAsString(ret.RawGetString("status")), Message: lua.LVAsString(ret.RawGetString("message"))}
	switch h.Status {
	case "Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown":
		return h, nil
	}
	return h, fmt.Errorf("the script returned status %q, not one of Argo CD's", h.Status)
}

// toLua converts a JSON value to Lua as Argo CD does: objects and arrays
// to tables (arrays from index 1), numbers to numbers.
func toLua(L *lua.LState, v any) (lua.LValue, error) {
	switch v := v.(type) {
	case nil:
		return lua.LNil, nil
	case bool:
		return lua.LBool(v), nil
	case string:
		return lua.LString(v), nil
	case int64:
		return lua.LNumber(v), nil
	case int:
		return lua.LNumber(v), nil
	case float64:
		return lua.LNumber(v), nil
	case json.Number:
		f, err := v.Float64()
		return lua.LNumber(f), err
	case []any:
		t := L.NewTable()
		for _, e := range v {
			lv, err := toLua(L, e)
			if err != nil {
				return nil, err
			}
			t.Append(lv)
		}
		return t, nil
	case map[string]any:
		t := L.NewTable()
		for k, e := range v {
			lv, err := toLua(L, e)
			if err != nil {
				return nil, err
			}
			t.RawSetString(k, lv)
		}
		return t, nil
	}
	return nil, fmt.Errorf("a %T in the object", v)
}
