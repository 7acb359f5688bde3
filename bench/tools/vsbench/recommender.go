// vsbench populate-histories: the state of bench/sections/recommender_memory.sh — VerticalScalers
// whose containers are all recommended (the seed's smallest scaler, mode Auto), each over a
// Deployment of two containers ("app", "sidecar") with replicas 0, each with a filled
// VerticalScalerCheckpoint (owned by it, as vscaler writes them) and the status.recommendation
// those histories give, as a previous leader would have left them. The histories come from
// bench/tools/checkpoint_day (one JSON line per variant; scaler k takes variant k mod variants);
// the Deployments' requests are the variant's targets, so the recommendation holds and no
// template patch is due.

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var checkpointResource = schema.GroupVersionResource{Group: "scaling.vscaler.dev", Version: "v1beta1", Resource: "verticalscalercheckpoints"}

// historyVariant is one line of checkpoint_day's output.
type historyVariant struct {
	Spec           map[string]any               `json:"spec"`
	Recommendation map[string]any               `json:"recommendation"`
	Requests       map[string]map[string]string `json:"requests"`
}

func readVariants(path string) []historyVariant {
	f, err := os.Open(path)
	if err != nil {
		fatal("populate-histories: %v", err)
	}
	defer f.Close()
	var out []historyVariant
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		var v historyVariant
		if err := json.Unmarshal(scanner.Bytes(), &v); err != nil {
			fatal("populate-histories: %s: %v", path, err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		fatal("populate-histories: no variant in %s", path)
	}
	return out
}

func twoContainerDeployment(name string, requests map[string]map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	replicas := int32(0)
	var containers []corev1.Container
	for _, c := range []string{"app", "sidecar"} {
		containers = append(containers, corev1.Container{
			Name: c, Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(requests[c]["cpu"]),
				corev1.ResourceMemory: resource.MustParse(requests[c]["memory"]),
			}},
		})
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: containers},
			},
		},
	}
}

func populateHistories(args []string) {
	fs := flag.NewFlagSet("populate-histories", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig")
	prefix := fs.String("prefix", "bench-rec", "namespace name prefix (PREFIX-000, ...)")
	namespaces := fs.Int("namespaces", 100, "namespaces")
	scalers := fs.Int("scalers", 10000, "scalers (s-N over d-N), round robin over the namespaces")
	variants := fs.String("histories", "", "checkpoint_day's output")
	workers := fs.Int("workers", 48, "parallel requests")
	fs.Parse(args)
	histories := readVariants(*variants)
	ctx := context.Background()
	kube, dyn, failed := populateClients(ctx, *kubeconfig, *prefix, *namespaces, *workers)
	failed += parallel(*scalers, *workers, "scalers with histories", func(k int) error {
		ns, index := namespaceName(*prefix, k%*namespaces), k / *namespaces
		v := histories[k%len(histories)]
		name, deployment := fmt.Sprintf("s-%05d", index), fmt.Sprintf("d-%05d", index)
		_, err := kube.AppsV1().Deployments(ns).Create(ctx, twoContainerDeployment(deployment, v.Requests),
			metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		scalers := dyn.Resource(scalerResource).Namespace(ns)
		scaler, err := scalers.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			scaler, err = scalers.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "scaling.vscaler.dev/v1beta1",
				"kind":       "VerticalScaler",
				"metadata":   map[string]any{"name": name, "namespace": ns},
				"spec":       map[string]any{"deploymentName": deployment},
			}}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
		}
		status, _ := json.Marshal(map[string]any{"status": map[string]any{"recommendation": v.Recommendation}})
		if _, err := scalers.Patch(ctx, name, types.MergePatchType, status, metav1.PatchOptions{},
			"status"); err != nil {
			return err
		}
		_, err = dyn.Resource(checkpointResource).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scaling.vscaler.dev/v1beta1",
			"kind":       "VerticalScalerCheckpoint",
			"metadata": map[string]any{"name": name, "namespace": ns, "ownerReferences": []any{map[string]any{
				"apiVersion": "scaling.vscaler.dev/v1beta1", "kind": "VerticalScaler", "name": name,
				"uid": string(scaler.GetUID())}}},
			"spec": v.Spec,
		}}, metav1.CreateOptions{})
		return err
	})
	if failed > 0 {
		fatal("populate-histories: %d failed", failed)
	}
}
