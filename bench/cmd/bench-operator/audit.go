package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// auditEvent is what the bench reads of an audit.k8s.io/v1 Event.
type auditEvent struct {
	// Verb is the request's verb (create, update, patch, delete).
	Verb string `json:"verb"`
	// User is who sent it.
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	// ObjectRef names the resource and subresource, and the object.
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	// RequestReceivedTimestamp is when the API server received the
	// request.
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
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

// readAudit calls fn with each event of the audit log.
func readAudit(path string, fn func(*auditEvent)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		fn(&ev)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	return nil
}

// statusWrite is one status write of a SummaIndex by the operator (an
// update by a reconcile pass, or a patch by a status watch).
type statusWrite struct {
	// received and done are when the API server received it and
	// answered.
	received, done time.Time
}

// statusWrites returns the operator's status writes of SummaIndexes that
// completed at or after from, by index, in the log's order.
func statusWrites(path string, from time.Time) (map[client.ObjectKey][]statusWrite, error) {
	out := map[client.ObjectKey][]statusWrite{}
	err := readAudit(path, func(ev *auditEvent) {
		if ev.User.Username != operatorUser || (ev.Verb != "update" && ev.Verb != "patch") || ev.ObjectRef.Resource != "summaindexes" ||
			ev.ObjectRef.Subresource != "status" || ev.StageTimestamp.Before(from) {
			return
		}
		k := client.ObjectKey{Namespace: ev.ObjectRef.Namespace, Name: ev.ObjectRef.Name}
		out[k] = append(out[k], statusWrite{received: ev.RequestReceivedTimestamp, done: ev.StageTimestamp})
	})
	return out, err
}

// countWrites reads the audit log (which the policy limits to the
// operator's mutating requests) and counts those that completed within
// [from, to].
func countWrites(path string, from, to time.Time) (writes, error) {
	w := writes{byKind: map[string]int{}}
	err := readAudit(path, func(ev *auditEvent) {
		if ev.User.Username != operatorUser || ev.StageTimestamp.Before(from) || ev.StageTimestamp.After(to) {
			return
		}
		kind := ev.Verb + " " + ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			kind += "/" + ev.ObjectRef.Subresource
		}
		w.total++
		w.byKind[kind]++
	})
	return w, err
}
