//go:build race

package cli

// raceEnabled builds the command under test with the race detector too.
const raceEnabled = true
