package client_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/summadev/summa/client"
)

// TestBackupAnswerHasEveryDocumentedField: GET
// /v1/indexes/{index}/backups/{id} answers
// {"id","generation","state","documents","bytes","reusedBytes","error"}
// for every state, "error" included (empty) when the backup did not fail.
func TestBackupAnswerHasEveryDocumentedField(t *testing.T) {
	for _, state := range []string{client.BackupRunning, client.BackupCompleted} {
		b, err := json.Marshal(client.Backup{ID: "20260101T000000.000Z-0123abcd", Generation: 3, State: state, StartedAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"id", "generation", "state", "documents", "bytes", "reusedBytes", "error"} {
			if _, ok := got[k]; !ok {
				t.Errorf("%s backup: field %q missing from %s", state, k, b)
			}
		}
		if e, ok := got["error"].(string); !ok || e != "" {
			t.Errorf("%s backup: \"error\" is %#v, want an empty string", state, got["error"])
		}
	}
}
