package s3backup

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestReadCredentials(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, text, id, secret, err string
	}{
		{"two lines", "AKID\nSECRET\n", "AKID", "SECRET", ""},
		{"two lines, blank and comment", "# key\nAKID\n\n SECRET \n", "AKID", "SECRET", ""},
		{"keyed", "AWS_ACCESS_KEY_ID=AKID\nAWS_SECRET_ACCESS_KEY=SE=CRET\n", "AKID", "SE=CRET", ""},
		{"keyed, quoted, export, other keys", "export AWS_ACCESS_KEY_ID=\"AKID\"\nAWS_REGION=x\nAWS_SECRET_ACCESS_KEY='S'\n", "AKID", "S", ""},
		{"one line", "AKID\n", "", "", "two lines"},
		{"keyed, no secret", "AWS_ACCESS_KEY_ID=AKID\n", "", "", "missing"},
		{"three lines", "a\nb\nc\n", "", "", "two lines"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		if err := os.WriteFile(p, []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		id, secret, err := ReadCredentials(p)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want one containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || id != c.id || secret != c.secret {
			t.Errorf("%s: %q %q %v, want %q %q", c.name, id, secret, err, c.id, c.secret)
		}
	}
	if _, _, err := ReadCredentials(filepath.Join(dir, "absent")); err == nil {
		t.Errorf("absent file: no error")
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Endpoint: "http://127.0.0.1:8333", Bucket: "b", CredentialsFile: "f"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for name, c := range map[string]Config{
		"no endpoint":   {Bucket: "b", CredentialsFile: "f"},
		"no bucket":     {Endpoint: "http://h:1", CredentialsFile: "f"},
		"no creds":      {Endpoint: "http://h:1", Bucket: "b"},
		"ftp endpoint":  {Endpoint: "ftp://h:1", Bucket: "b", CredentialsFile: "f"},
		"path endpoint": {Endpoint: "http://h:1/x", Bucket: "b", CredentialsFile: "f"},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if h, secure, err := parseEndpoint("s3.example.org:443"); err != nil || h != "s3.example.org:443" || !secure {
		t.Errorf("bare host: %q %v %v", h, secure, err)
	}
}

func TestIDsSortByTime(t *testing.T) {
	base := time.Date(2026, 12, 5, 17, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 50 {
		id := NewID(base.Add(time.Duration(i) * 7 * time.Millisecond))
		if !ValidID(id) {
			t.Fatalf("NewID %q is not ValidID", id)
		}
		ids = append(ids, id)
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatalf("IDs do not sort by time: %v", ids)
	}
	for _, bad := range []string{"", "latest", "../x", "20261205T170000.000Z-0000000g", "20261205T170000Z-00000000"} {
		if ValidID(bad) {
			t.Errorf("ValidID(%q)", bad)
		}
	}
}

func TestLayout(t *testing.T) {
	for _, prefix := range []string{"", "/", "p", "/p/q/"} {
		l := newLayout(prefix)
		want := strings.Trim(prefix, "/")
		if want != "" {
			want += "/"
		}
		if k := l.fileKey("idx", "seg_0001.post", "ab"); k != want+"idx/files/seg_0001.post-ab" {
			t.Errorf("prefix %q: file key %q", prefix, k)
		}
		id := "20261205T170000.000Z-0123abcd"
		k := l.manifestKey("idx", id)
		if k != want+"idx/backups/"+id+".json" || l.idOfManifestKey("idx", k) != id {
			t.Errorf("prefix %q: manifest key %q", prefix, k)
		}
		if l.idOfManifestKey("other", k) != "" || l.idOfManifestKey("idx", want+"idx/backups/x.json") != "" {
			t.Errorf("prefix %q: a foreign key parsed as a manifest", prefix)
		}
	}
}
