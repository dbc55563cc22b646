// Command rulemut proves, rule by rule, that each rule of the rule table in
// docs/engine.md has a test that fails when the rule breaks: for every
// entry of mutations (a realistic mutation of the production code; a rule
// may have several) it applies the mutation in a scratch copy of the tree, checks that
// the mutated packages still build (and vet, with -vet), compiles the
// package's test binary (no deadline: a slow build under load takes no
// time from the tests), runs that rule's tests with it under -timeout, and
// expects them to fail. The real checkout is never modified.
//
// Usage (from the repository root; `make rule-mutations` runs it):
//
//	go run ./hack/rulemut [-only L03,C07,C04:2] [-vet] [-timeout 4m] [-j 2] [-keep]
//	go run ./hack/rulemut -check   # every snippet applies (seconds)
//	go run ./hack/rulemut -table   # the Markdown table of docs/engine.md
//
// It prints one line per entry, `RULE STATUS description`, and under it
// the test and the assertion that failed (`TestX: file_test.go:NN:
// message`), then `rule mutations killed: K/N` and the elapsed time. Only
// `killed` counts: an assertion of the rule's own tests (a line calling
// t.Errorf, t.Fatalf, ... or a helper marked with t.Helper, whose line is
// shown) failed them. Not counted: PANIC (a panic, a synctest deadlock
// report, a test timeout, or the runner killing a binary a minute past
// its -timeout ended the run), SETUP (only a check whose
// message starts with "setup" failed), NOASSERT (no assertion message),
// SURVIVED (the tests pass), BROKEN (the entry itself is wrong: its
// snippet is missing or not unique, the mutant or its tests do not build,
// or the unmutated tests fail or match nothing). It exits non-zero unless
// every entry is killed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Mutation is one realistic way to break one rule, and the tests that must
// catch it.
type Mutation struct {
	// Rule is a rule ID of docs/engine.md ("Rules and where they are kept").
	Rule string
	// Desc says in one line what the careless change does.
	Desc string
	// Edits are the changes to the production code; most mutations have one.
	Edits []Edit
	// Pkg is the package whose tests must fail (./engine/index, ...).
	Pkg string
	// Run is the -run regular expression selecting the rule's tests; it
	// must not contain a slash (go test splits -run on slashes).
	Run string
	// Timeout, when set, replaces -timeout for a mutant expected to hang
	// its tests (a deadlock is a failure, found sooner).
	Timeout time.Duration
}

// Edit replaces one snippet of one file. From is one or more whole lines
// that must occur exactly once in File, compared line by line with leading
// and trailing white space ignored (so the snippets can be indented here as
// Go source); To replaces them, re-indented to the first matched line.
type Edit struct {
	// File is relative to the repository root.
	File string
	// From is the original lines.
	From string
	// To is the replacement lines (empty: the lines are deleted).
	To string
}

var (
	// withVet makes every mutant pass go vet, not only go build.
	withVet bool
	// jobs is the number of mutants tested at once (-j).
	jobs = 1
	// baselineTimeout bounds the unmutated run of one package's rule
	// tests, all of them at once (-baseline-timeout).
	baselineTimeout = 20 * time.Minute
)

func main() {
	only := flag.String("only", "", "comma-separated rule IDs to run, RULE:N for a rule's Nth entry only (default: all)")
	timeout := flag.Duration("timeout", 4*time.Minute, "go test -timeout for one mutant (a mutant that hangs its tests fails them)")
	keep := flag.Bool("keep", false, "keep the scratch copy of the tree")
	vet := flag.Bool("vet", false, "go vet every mutant (tests included) before running its tests")
	check := flag.Bool("check", false, "only check that every entry's snippets apply (no build, no test)")
	table := flag.Bool("table", false, "print the entries as the Markdown table of docs/engine.md and exit")
	j := flag.Int("j", 1, "mutants tested at once, each in a scratch copy of its own")
	baseTimeout := flag.Duration("baseline-timeout", 20*time.Minute, "go test -timeout for the unmutated run of a package's rule tests")
	flag.Parse()
	if *table {
		printTable()
		return
	}
	if *check {
		if err := checkAll(*only); err != nil {
			fmt.Fprintln(os.Stderr, "rulemut:", err)
			os.Exit(1)
		}
		return
	}
	withVet = *vet
	jobs = max(*j, 1)
	baselineTimeout = *baseTimeout
	if err := run(*only, *timeout, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "rulemut:", err)
		os.Exit(2)
	}
}

func run(only string, timeout time.Duration, keep bool) error {
	start := time.Now()
	list, root, err := selectedIn(only)
	if err != nil {
		return err
	}
	scratch, err := scratchCopy(root)
	if scratch != "" {
		if keep {
			fmt.Println("scratch copy:", scratch)
		} else {
			defer os.RemoveAll(scratch)
		}
	}
	if err != nil {
		return err
	}
	passing, err := baseline(scratch, list, baselineTimeout)
	if err != nil {
		return err
	}
	// With -j, each further worker mutates a copy of its own.
	dirs := []string{scratch}
	for k := 1; k < jobs; k++ {
		d, err := scratchCopy(root)
		if d != "" {
			defer os.RemoveAll(d)
		}
		if err != nil {
			return err
		}
		dirs = append(dirs, d)
	}
	type result struct{ status, detail string }
	results := make([]chan result, len(list))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	next := make(chan int)
	go func() {
		for i := range list {
			next <- i
		}
		close(next)
	}()
	for _, d := range dirs {
		go func() {
			for i := range next {
				status, detail := mutate(d, list[i], passing, timeout)
				results[i] <- result{status, detail}
			}
		}()
	}
	killed := 0
	var notCounted []string
	for i, m := range list {
		r := <-results[i] // in list order
		status, detail := r.status, r.detail
		if status == "killed" {
			killed++
		}
		fmt.Printf("%-4s %-8s %s\n", m.Rule, status, m.Desc)
		if status != "killed" {
			notCounted = append(notCounted, m.Rule+" "+status)
		}
		if detail != "" {
			fmt.Printf("     %s\n", strings.ReplaceAll(detail, "\n", "\n     "))
		}
	}
	if len(notCounted) > 0 {
		fmt.Printf("not killed by an assertion of the rule's tests: %s\n", strings.Join(notCounted, ", "))
	}
	fmt.Printf("rule mutations killed: %d/%d\n", killed, len(list))
	fmt.Printf("elapsed: %s\n", time.Since(start).Round(time.Second))
	if killed != len(list) {
		os.Exit(1)
	}
	return nil
}

// printTable prints the entries as Markdown table rows: rule, mutation,
// mutated files, tests.
func printTable() { writeTable(os.Stdout) }

// writeTable writes the Markdown table printTable prints to w (the table
// of docs/engine.md, which TestDocsTableIsCurrent compares).
func writeTable(w io.Writer) {
	fmt.Fprintln(w, "| rule | mutation | mutated | tests that must fail |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, m := range mutations {
		var files []string
		seen := map[string]bool{}
		for _, e := range m.Edits {
			if !seen[e.File] {
				seen[e.File] = true
				files = append(files, "`"+e.File+"`")
			}
		}
		pkg := strings.TrimPrefix(m.Pkg, "./")
		fmt.Fprintf(w, "| %s | %s | %s | `%s` `-run %s` |\n", m.Rule, m.Desc, strings.Join(files, ", "), pkg, m.Run)
	}
}

// checkAll applies every selected entry's edits in memory to the files of
// the checkout and reports those that do not apply.
func checkAll(only string) error {
	list, root, err := selectedIn(only)
	if err != nil {
		return err
	}
	bad := 0
	for _, m := range list {
		files := map[string]string{}
		for _, e := range m.Edits {
			cur, ok := files[e.File]
			if !ok {
				b, err := os.ReadFile(filepath.Join(root, e.File))
				if err != nil {
					return err
				}
				cur = string(b)
			}
			next, err := apply(cur, e.From, e.To)
			if err != nil {
				fmt.Printf("%s: %s: %v\n", m.Rule, e.File, err)
				bad++
				break
			}
			files[e.File] = next
		}
	}
	fmt.Printf("%d entries, %d do not apply\n", len(list), bad)
	if bad > 0 {
		return fmt.Errorf("%d entries do not apply", bad)
	}
	return nil
}

// scratchCopy copies the working tree at root as it is (uncommitted edits
// included), without .git and ignored build outputs, into a new temporary
// directory: nothing done there can reach the checkout or its history.
// The directory is returned (to remove) even when the copy failed.
func scratchCopy(root string) (string, error) {
	d, err := os.MkdirTemp("", "rulemut-")
	if err != nil {
		return "", fmt.Errorf("scratch directory: %w", err)
	}
	if err := copyTree(root, d); err != nil {
		return d, fmt.Errorf("copy the tree: %w", err)
	}
	return d, nil
}

// selectedIn returns the entries named in only (see selected) and the
// root of the checkout they apply to.
func selectedIn(only string) ([]Mutation, string, error) {
	list, err := selected(only)
	if err != nil {
		return nil, "", err
	}
	root, err := repoRoot()
	if err != nil {
		return nil, "", err
	}
	return list, root, nil
}

// selected returns the entries named in only (all if empty): a rule ID
// selects all of that rule's entries, RULE:N only its Nth (1-based, in
// the order of mutations), e.g. "L03,C04:2".
func selected(only string) ([]Mutation, error) {
	want := map[string]bool{}
	for _, id := range strings.Split(only, ",") {
		if id = strings.TrimSpace(id); id != "" {
			want[id] = true
		}
	}
	seen := map[string]bool{}
	count := map[string]int{}
	var list []Mutation
	for _, m := range mutations {
		// A rule may have several entries (several realistic ways to
		// break it); each must be killed by that rule's tests.
		count[m.Rule]++
		entry := fmt.Sprintf("%s:%d", m.Rule, count[m.Rule])
		seen[m.Rule], seen[entry] = true, true
		if strings.Contains(m.Run, "/") {
			return nil, fmt.Errorf("rule %s: -run %q contains a slash", m.Rule, m.Run)
		}
		if len(want) == 0 || want[m.Rule] || want[entry] {
			list = append(list, m)
		}
	}
	for id := range want {
		if !seen[id] {
			return nil, fmt.Errorf("no entry %s", id)
		}
	}
	return list, nil
}

func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the module")
	}
	return filepath.Dir(mod), nil
}

var passLine = regexp.MustCompile(`(?m)^--- PASS: (\S+)`)

// baseline runs every selected rule's tests once on the unmutated copy,
// package by package, and returns the names of the top-level tests that
// passed in each package. An entry whose tests fail or match nothing
// unmutated is broken, not killed.
func baseline(dir string, list []Mutation, timeout time.Duration) (map[string][]string, error) {
	runs := map[string][]string{}
	var order []string
	for _, m := range list {
		if _, ok := runs[m.Pkg]; !ok {
			order = append(order, m.Pkg)
		}
		runs[m.Pkg] = append(runs[m.Pkg], "(?:"+m.Run+")")
	}
	passing := map[string][]string{}
	for _, pkg := range order {
		t0 := time.Now()
		out, err := goTest(dir, pkg, strings.Join(runs[pkg], "|"), timeout, true)
		if err != nil {
			out, err = rerunFailed(dir, pkg, out, timeout)
		}
		if err != nil {
			return nil, fmt.Errorf("the unmutated rule tests of %s fail:\n%s\n%s", pkg, failures(out), tail(out, 15))
		}
		for _, sub := range passLine.FindAllStringSubmatch(out, -1) {
			passing[pkg] = append(passing[pkg], sub[1])
		}
		fmt.Printf("baseline %s: %d rule tests pass (%s)\n", pkg, len(passing[pkg]), time.Since(t0).Round(time.Second))
	}
	return passing, nil
}

// rerunFailed runs once more, alone, the top-level tests that failed in
// the unmutated run out (a test that failed only under the machine's load
// passes then, and the run goes on), and returns the whole output with the
// rerun's appended. It fails if any of them fails again, or if out names
// no failed test (a build failure, a crash of the binary).
func rerunFailed(dir, pkg, out string, timeout time.Duration) (string, error) {
	var names []string
	for _, m := range failLine.FindAllStringSubmatch(out, -1) {
		if top, _, _ := strings.Cut(m[1], "/"); !slices.Contains(names, top) {
			names = append(names, top)
		}
	}
	if len(names) == 0 {
		return out, fmt.Errorf("%s: no failed test named", pkg)
	}
	fmt.Printf("baseline %s: %s failed; run again alone\n", pkg, strings.Join(names, ", "))
	again, err := goTest(dir, pkg, "^("+strings.Join(names, "|")+")$", timeout, true)
	if err != nil {
		return again, err
	}
	fmt.Printf("baseline %s: %s passed on the second run\n", pkg, strings.Join(names, ", "))
	return out + "\n" + again, nil
}

// mutate applies m in dir, runs its tests and restores the files.
func mutate(dir string, m Mutation, passing map[string][]string, timeout time.Duration) (status, detail string) {
	re, err := regexp.Compile(m.Run)
	if err != nil {
		return "BROKEN", fmt.Sprintf("-run %q: %v", m.Run, err)
	}
	var names []string
	for _, name := range passing[m.Pkg] {
		if re.MatchString(name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "BROKEN", fmt.Sprintf("-run %q matches no passing test of %s", m.Run, m.Pkg)
	}
	if len(m.Edits) == 0 {
		return "BROKEN", "no edit"
	}
	originals := map[string][]byte{}
	defer func() {
		for path, orig := range originals {
			if err := os.WriteFile(path, orig, 0o644); err != nil {
				panic(fmt.Sprintf("restore %s: %v", path, err))
			}
		}
	}()
	var filePkgs []string
	for _, e := range m.Edits {
		path := filepath.Join(dir, e.File)
		cur, err := os.ReadFile(path)
		if err != nil {
			return "BROKEN", err.Error()
		}
		if _, ok := originals[path]; !ok {
			originals[path] = cur
		}
		next, err := apply(string(cur), e.From, e.To)
		if err != nil {
			return "BROKEN", fmt.Sprintf("%s: %v", e.File, err)
		}
		if err := os.WriteFile(path, []byte(next), 0o644); err != nil {
			return "BROKEN", err.Error()
		}
		if pkg := "./" + filepath.Dir(e.File); !slices.Contains(filePkgs, pkg) {
			filePkgs = append(filePkgs, pkg)
		}
	}
	// The mutant must compile (go build of the mutated packages here, its
	// tests below; -vet adds go vet): a build failure is not a kill.
	buildArgs := append([]string{"build"}, filePkgs...)
	if withVet {
		buildArgs = append([]string{"vet", m.Pkg}, filePkgs...)
	}
	if out, err := output(context.Background(), dir, "go", buildArgs...); err != nil {
		return "BROKEN", "the mutant does not build:\n" + tail(out, 15)
	}
	if m.Timeout > 0 {
		timeout = m.Timeout
	}
	out, err := goTest(dir, m.Pkg, m.Run, timeout, false)
	switch {
	case err == nil:
		return "SURVIVED", fmt.Sprintf("%s -run %q still passes (%s)", m.Pkg, m.Run, strings.Join(names, ", "))
	case errors.Is(err, errTestBuild):
		return "BROKEN", "the mutant's tests do not build:\n" + tail(out, 15)
	case errors.Is(err, errDeadline):
		return "PANIC", fmt.Sprintf("not counted: the tests ran past -timeout %s and were %v:\n%s", timeout, errDeadline, tail(out, 10))
	}
	return classify(filepath.Join(dir, m.Pkg), out)
}

var (
	failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)
	msgLine  = regexp.MustCompile(`(?m)^\s+(\S+_test\.go):(\d+): (.*)$`)
	panicMsg = regexp.MustCompile(`(?m)^(panic: .*|.*test timed out.*)$`)
	// assertCall is a line of a test that fails it: t.Errorf, t.Fatalf,
	// t.Error, t.Fatal, t.Fail, t.FailNow (on any *testing.T variable).
	assertCall = regexp.MustCompile(`\.(Errorf|Fatalf|Error|Fatal|Fail|FailNow)\(`)
)

// failures returns the lines of out that name a failed test, its
// messages and panics.
func failures(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if failLine.MatchString(l) || msgLine.MatchString(l) || panicMsg.MatchString(l) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// classify tells how the rule's tests failed on a mutant, from their
// output. A kill counts only when an assertion of the tests failed them:
// the first failing test's message comes from a line that calls
// t.Errorf/t.Fatalf/... (read in pkgDir), it is not a setup check (a
// message starting with "setup"), and no panic or timeout ended the run.
// Anything else is reported with the reason it does not count:
// PANIC (a panic, a deadlock report or a test timeout), SETUP (a setup
// check failed, not the rule's assertion), NOASSERT (no assertion line).
// The detail names the test and the assertion: TestX: file_test.go:NN:
// message, and the source line for a failure reported through a helper.
func classify(pkgDir, out string) (status, detail string) {
	test := ""
	if m := failLine.FindStringSubmatch(out); m != nil {
		test = m[1]
	}
	panicked := panicMsg.FindString(out)
	setup := ""
	for _, l := range strings.Split(out, "\n") {
		if m := failLine.FindStringSubmatch(l); m != nil {
			test = m[1]
			continue
		}
		m := msgLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		file, line, msg := m[1], m[2], m[3]
		src := sourceLine(filepath.Join(pkgDir, file), line)
		where := fmt.Sprintf("%s: %s:%s: %s", test, file, line, clip(msg, 160))
		if !assertCall.MatchString(src) {
			if strings.Contains(src, ".Log") {
				continue // a log line: the assertion comes after it
			}
			// A helper marked with t.Helper: say which.
			where += "  [line: " + clip(strings.TrimSpace(src), 80) + "]"
		}
		switch {
		case panicked != "":
			return "PANIC", "not counted: " + panicked + "\n(first message " + where + ")"
		case strings.HasPrefix(strings.ToLower(msg), "setup"):
			if setup == "" {
				setup = where
			}
			continue // another test may fail on its own assertion
		}
		return "killed", where
	}
	switch {
	case panicked != "":
		return "PANIC", fmt.Sprintf("not counted: %s: %s", test, panicked)
	case setup != "":
		return "SETUP", "not counted: only a setup check failed: " + setup
	}
	return "NOASSERT", "not counted: no assertion message:\n" + tail(out, 10)
}

// sourceLine returns line n (1-based, decimal) of file, or "".
func sourceLine(file, n string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	var i int
	if _, err := fmt.Sscan(n, &i); err != nil {
		return ""
	}
	ls := strings.Split(string(b), "\n")
	if i < 1 || i > len(ls) {
		return ""
	}
	return ls[i-1]
}

// clip shortens s to at most n bytes.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// apply replaces the lines of src matching from (white space around each
// line ignored; exactly one match) by to, re-indented to the first matched
// line.
func apply(src, from, to string) (string, error) {
	want := snippetLines(from)
	if len(want) == 0 {
		return "", errors.New("empty original snippet")
	}
	lines := strings.Split(src, "\n")
	at, n := -1, 0
	for i := 0; i+len(want) <= len(lines); i++ {
		match := true
		for k, w := range want {
			if strings.TrimSpace(lines[i+k]) != w {
				match = false
				break
			}
		}
		if match {
			at, n = i, n+1
		}
	}
	if n != 1 {
		return "", fmt.Errorf("the original snippet occurs %d times (want exactly once):\n%s", n, strings.Join(want, "\n"))
	}
	first := lines[at]
	indent := first[:len(first)-len(strings.TrimLeft(first, " \t"))]
	var repl []string
	for _, l := range dedent(to) {
		if l == "" {
			repl = append(repl, "")
		} else {
			repl = append(repl, indent+l)
		}
	}
	out := append(append(append([]string(nil), lines[:at]...), repl...), lines[at+len(want):]...)
	return strings.Join(out, "\n"), nil
}

// snippetLines returns the trimmed lines of s without leading and trailing
// blank lines.
func snippetLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		out = append(out, strings.TrimSpace(l))
	}
	for len(out) > 0 && out[0] == "" {
		out = out[1:]
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// dedent returns the lines of s without leading and trailing blank lines
// and without the white space common to the start of every non-blank line.
func dedent(s string) []string {
	lines := strings.Split(s, "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	prefix := ""
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		lead := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if i == 0 || prefix == "" && i == 0 {
			prefix = lead
		}
		for !strings.HasPrefix(lead, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		out[i] = strings.TrimRight(strings.TrimPrefix(l, prefix), " \t")
	}
	return out
}
