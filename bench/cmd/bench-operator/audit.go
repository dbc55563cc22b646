package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// auditEvent is what the bench reads of an audit.k8s.io/v1 Event.
type auditEvent struct {
	// Verb is the request's verb (create, update, patch, delete).
	Verb string `json:"verb"`
	// User is who sent it.
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	// ObjectRef names the resource and subresource.
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	// StageTimestamp is when the response completed.
	StageTimestamp time.Time `json:"stageTimestamp"`
}

// writes counts the operator's mutating requests in a window.
type writes struct {
	// total is the number of requests.
	total int
	// byKind counts them by "verb resource[/subresource]".
	byKind map[string]int
}

// String lists the counts by kind, largest first.
func (w writes) String() string {
	kinds := make([]string, 0, len(w.byKind))
	for k := range w.byKind {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return w.byKind[kinds[i]] > w.byKind[kinds[j]] })
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s=%d", k, w.byKind[k])
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// countWrites reads the audit log (which the policy limits to the
// operator's mutating requests) and counts those that completed within
// [from, to].
func countWrites(path string, from, to time.Time) (writes, error) {
	w := writes{byKind: map[string]int{}}
	f, err := os.Open(path)
	if err != nil {
		return w, fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return w, fmt.Errorf("audit log: %w", err)
		}
		if ev.User.Username != operatorUser || ev.StageTimestamp.Before(from) || ev.StageTimestamp.After(to) {
			continue
		}
		kind := ev.Verb + " " + ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			kind += "/" + ev.ObjectRef.Subresource
		}
		w.total++
		w.byKind[kind]++
	}
	return w, sc.Err()
}
