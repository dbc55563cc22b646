// Command score reads gremlins' JSON results and prints the mutation score
// of the crash-critical code (make mutate):
//
//	mutation score crash-critical: S
//
// with S = killed / (killed + survived). A TIMED OUT mutant counts as
// killed, a NOT COVERED one as survived (no test executes it), a NOT
// VIABLE one is no mutant. Mutants listed in the equivalent file (one a
// line: `path:line:column TYPE reason`, # comments) are left out. Mutants
// listed in the by-hand file (same format), which gremlins cannot run (NOT
// COVERED: a switch's case expression, a constant) and which were killed
// by hand, count as killed; one the tool did run is counted as the tool
// found it, and reported. An entry of either file that matches no mutant
// of a file that ran is reported as stale.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// results is the part of gremlins' --output file that is read.
type results struct {
	// Files holds the mutants of each file.
	Files []struct {
		// Filename is the file's path inside the module.
		Filename string `json:"file_name"`
		// Mutations are the file's mutants.
		Mutations []struct {
			// Type is the mutator (CONDITIONALS_NEGATION, ...).
			Type string `json:"type"`
			// Status is KILLED, LIVED, NOT COVERED, TIMED OUT, NOT VIABLE.
			Status string `json:"status"`
			// Line and Column locate the mutated token.
			Line   int `json:"line"`
			Column int `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
}

func main() {
	equivalentPath := flag.String("equivalent", "hack/mutate/equivalent.txt", "the list of equivalent mutants")
	byHandPath := flag.String("by-hand", "hack/mutate/killed-by-hand.txt", "the list of mutants killed by hand")
	seconds := flag.Int("seconds", 0, "the run's duration, printed")
	flag.Parse()
	equivalent, err := readEquivalent(*equivalentPath)
	if err == nil {
		var byHand map[string]string
		byHand, err = readEquivalent(*byHandPath)
		for key := range byHand {
			if _, ok := equivalent[key]; ok {
				err = fmt.Errorf("%s is listed both as equivalent and as killed by hand", key)
			}
			equivalent[key] = handMark
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "score:", err)
		os.Exit(2)
	}
	used := map[string]bool{}
	var killed, survived, excluded, hand int
	var survivors, units []string
	ran := map[string]bool{} // the files whose mutants ran
	for _, arg := range flag.Args() {
		// unit=package=results.json; gremlins names files inside the package.
		unit, rest, _ := strings.Cut(arg, "=")
		pkg, path, _ := strings.Cut(rest, "=")
		units = append(units, unit)
		var r results
		data, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(data, &r)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "score:", unit, err)
			os.Exit(2)
		}
		var uk, us, uh int
		for _, f := range r.Files {
			ran[filepath.ToSlash(filepath.Join(pkg, f.Filename))] = true
			for _, m := range f.Mutations {
				key := fmt.Sprintf("%s:%d:%d %s", filepath.ToSlash(filepath.Join(pkg, f.Filename)), m.Line, m.Column, m.Type)
				if reason, ok := equivalent[key]; ok {
					used[key] = true
					if reason != handMark {
						excluded++
						continue
					}
					if m.Status == "NOT COVERED" {
						uk++
						uh++
						continue
					}
					fmt.Println("by-hand entry the tool ran (counted as it found):", key, m.Status)
				}
				switch m.Status {
				case "KILLED", "TIMED OUT":
					uk++
				case "LIVED", "NOT COVERED":
					us++
					survivors = append(survivors, key+" "+m.Status)
				}
			}
		}
		fmt.Printf("%-14s killed %d (by hand %d), survived %d\n", unit, uk, uh, us)
		hand += uh
		killed += uk
		survived += us
	}
	sort.Strings(survivors)
	for _, s := range survivors {
		fmt.Println("survived:", s)
	}
	for key := range equivalent {
		if file, _, _ := strings.Cut(key, ":"); !used[key] && ran[file] {
			fmt.Println("stale entry (no such mutant):", key)
		}
	}
	score := 0.0
	if killed+survived > 0 {
		score = float64(killed) / float64(killed+survived)
	}
	fmt.Printf("scope: %s; killed %d (by hand %d), survived %d, equivalent %d; %d s\n",
		strings.Join(units, " "), killed, hand, survived, excluded, *seconds)
	fmt.Printf("mutation score crash-critical: %.2f\n", score)
}

// handMark marks, among the excluded, the mutants killed by hand.
const handMark = "\x00killed by hand"

// readEquivalent reads the equivalent mutants, keyed `path:line:col TYPE`.
func readEquivalent(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 {
			return nil, fmt.Errorf("%s:%d: want `path:line:col TYPE reason`", path, n)
		}
		out[fields[0]+" "+fields[1]] = strings.Join(fields[2:], " ")
	}
	return out, s.Err()
}
