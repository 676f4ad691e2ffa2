//go:build race

package bridge

const guardRace = true
