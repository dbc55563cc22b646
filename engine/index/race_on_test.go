//go:build race

package index

// raceEnabled is true under the race detector.
const raceEnabled = true
