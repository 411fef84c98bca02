//go:build !race

package openai

const raceDetector = false
