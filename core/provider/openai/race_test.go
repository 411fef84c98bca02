//go:build race

package openai

// raceDetector: the race detector drops some of what a sync.Pool is given and instruments
// memory, so that allocation counts are not the program's.
const raceDetector = true
