//go:build tools

// Package tools pins the command this module builds; the file is never compiled.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
