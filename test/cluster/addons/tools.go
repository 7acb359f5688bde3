//go:build tools

// Package tools pins the commands this module builds; the file is never compiled.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/metrics-server/cmd/metrics-server"
)
