package main

import "context"

// startSimulator will serve the built-in upstream simulator; until it lands, the demo
// catalogue points at its future address.
func startSimulator(context.Context) (string, error) { return "http://127.0.0.1:8089", nil }
