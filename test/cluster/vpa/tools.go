//go:build tools

// Package tools pins the commands this module builds; the file is never compiled.
package tools

import (
	_ "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/admission-controller"
	_ "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender"
	_ "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/updater"
)
