//go:build !linux

package main

// threadID is 0 where the thread id is not known: loch_interrupt(0) then
// interrupts whichever interruptible call registered last.
func threadID() int { return 0 }
