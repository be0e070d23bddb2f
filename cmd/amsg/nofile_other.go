//go:build !unix

package main

// descriptorLimit has no system limit to read here: a common Unix default.
func descriptorLimit() uint64 { return 1024 }
