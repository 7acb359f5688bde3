// peer-vpa-recommender: VerticalPodAutoscaler's recommender model (k8s.io/autoscaler/
// vertical-pod-autoscaler v1.8.1, pkg/recommender/model) on the workload of
// bench/recommender_bench.cpp, so that its rows can be compared: samples folded per second and
// bytes per container after a day at one sample a minute (1,000 containers x 2 pods; a
// container's bytes include its two per-pod ContainerStates, as vscaler's include its per-pod
// clocks). Prints id<TAB>label<TAB>value lines.
package main

import (
	"fmt"
	"math"
	"runtime"
	"time"

	"k8s.io/autoscaler/vertical-pod-autoscaler/pkg/recommender/model"
)

const (
	containers = 1000
	pods       = 2
	minutes    = 24 * 60
	mi         = 1024.0 * 1024.0
)

var t0 = time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)

// noise is the same deterministic generator as the C++ bench's.
func noise(x uint32) float64 {
	x = x*1664525 + 1013904223
	x ^= x >> 13
	x *= 2654435761
	return float64(x%10000) / 10000.0
}

func usage(shape string, container, minute int) (float64, float64) {
	switch shape {
	case "noisy":
		return 0.05 + 1.95*noise(uint32(container*minutes+minute)),
			(200 + 600*noise(uint32(container*minutes+minute+7))) * mi
	case "sine":
		return 0.3 + 0.25*math.Sin(float64(minute)*2*math.Pi/minutes),
			(400 + 200*math.Sin(float64(minute)*2*math.Pi/minutes)) * mi
	}
	return 0.3, 400 * mi
}

type container struct {
	aggregate *model.AggregateContainerState
	states    []*model.ContainerState
}

func dayOf(shape string) ([]container, float64) {
	request := model.Resources{
		model.ResourceCPU:    model.CPUAmountFromCores(0.5),
		model.ResourceMemory: model.MemoryAmountFromBytes(512 * mi),
	}
	all := make([]container, containers)
	for c := range all {
		all[c].aggregate = model.NewAggregateContainerState()
		for p := 0; p < pods; p++ {
			all[c].states = append(all[c].states, model.NewContainerState(request, all[c].aggregate))
		}
	}
	start := time.Now()
	for m := 0; m < minutes; m++ {
		for c := range all {
			cpu, memory := usage(shape, c, m)
			at := t0.Add(time.Duration(m) * time.Minute)
			for _, state := range all[c].states {
				state.AddSample(&model.ContainerUsageSample{MeasureStart: at,
					Usage:    model.CPUAmountFromCores(cpu),
					Resource: model.ResourceCPU})
				state.AddSample(&model.ContainerUsageSample{MeasureStart: at,
					Usage:    model.MemoryAmountFromBytes(memory),
					Resource: model.ResourceMemory})
			}
		}
	}
	return all, float64(containers*pods*minutes) / time.Since(start).Seconds()
}

func heap() uint64 {
	runtime.GC()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return stats.HeapAlloc
}

func main() {
	rows := [][3]string{}
	for _, shape := range []string{"noisy", "steady", "sine"} {
		before := heap()
		all, rate := dayOf(shape)
		bytes := float64(heap()-before) / containers
		runtime.KeepAlive(all)
		if shape == "noisy" {
			rows = append(rows, [3]string{"ingest", "samples folded into aggregates, noisy usage (samples/s)",
				fmt.Sprintf("%.0f", rate)})
		}
		rows = append(rows, [3]string{"bytes_" + shape, "bytes per container, a day of " + shape + " usage",
			fmt.Sprintf("%.0f", bytes)})
	}
	for _, r := range rows {
		fmt.Printf("%s\t%s\t%s\n", r[0], r[1], r[2])
	}
}
