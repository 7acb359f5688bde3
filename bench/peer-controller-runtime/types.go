package main

// A small hand-written Go type for the VerticalScaler CRD (manifests/crd/verticalscalers.yaml),
// as a controller-runtime user without controller-gen would write it: the fields the peer reads
// and writes, and the deep copies runtime.Object needs.

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var groupVersion = schema.GroupVersion{Group: "scaling.vscaler.dev", Version: "v1beta1"}

// addToScheme registers VerticalScaler and VerticalScalerList.
func addToScheme(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(groupVersion, &VerticalScaler{}, &VerticalScalerList{})
	metav1.AddToGroupVersion(scheme, groupVersion)
	return nil
}

type VerticalScaler struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              VerticalScalerSpec   `json:"spec"`
	Status            VerticalScalerStatus `json:"status,omitempty"`
}

type VerticalScalerSpec struct {
	DeploymentName string               `json:"deploymentName"`
	UpdateMode     string               `json:"updateMode,omitempty"`
	Containers     []ContainerResources `json:"containers"`
}

// ContainerResources is one entry of spec.containers (name "*" = every container not named) and
// of status.containers.
type ContainerResources struct {
	Name     string              `json:"name"`
	Requests corev1.ResourceList `json:"requests,omitempty"`
	Limits   corev1.ResourceList `json:"limits,omitempty"`
}

type DeploymentRef struct {
	Name  string `json:"name"`
	UID   string `json:"uid,omitempty"`
	Found bool   `json:"found"`
}

type VerticalScalerStatus struct {
	ObservedGeneration int64                `json:"observedGeneration,omitempty"`
	Deployment         *DeploymentRef       `json:"deployment,omitempty"`
	Containers         []ContainerResources `json:"containers,omitempty"`
	LastScaleTime      *metav1.Time         `json:"lastScaleTime,omitempty"`
	Conditions         []metav1.Condition   `json:"conditions,omitempty"`
}

type VerticalScalerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VerticalScaler `json:"items"`
}

func copyContainers(in []ContainerResources) []ContainerResources {
	if in == nil {
		return nil
	}
	out := make([]ContainerResources, len(in))
	for i, c := range in {
		out[i] = ContainerResources{Name: c.Name, Requests: c.Requests.DeepCopy(), Limits: c.Limits.DeepCopy()}
	}
	return out
}

func (in *VerticalScaler) DeepCopyInto(out *VerticalScaler) {
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = VerticalScalerSpec{
		DeploymentName: in.Spec.DeploymentName,
		UpdateMode:     in.Spec.UpdateMode,
		Containers:     copyContainers(in.Spec.Containers),
	}
	out.Status = VerticalScalerStatus{
		ObservedGeneration: in.Status.ObservedGeneration,
		Containers:         copyContainers(in.Status.Containers),
		LastScaleTime:      in.Status.LastScaleTime.DeepCopy(),
	}
	if in.Status.Deployment != nil {
		ref := *in.Status.Deployment
		out.Status.Deployment = &ref
	}
	if in.Status.Conditions != nil {
		out.Status.Conditions = make([]metav1.Condition, len(in.Status.Conditions))
		for i := range in.Status.Conditions {
			in.Status.Conditions[i].DeepCopyInto(&out.Status.Conditions[i])
		}
	}
}

func (in *VerticalScaler) DeepCopy() *VerticalScaler {
	if in == nil {
		return nil
	}
	out := new(VerticalScaler)
	in.DeepCopyInto(out)
	return out
}

func (in *VerticalScaler) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *VerticalScalerList) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := &VerticalScalerList{TypeMeta: in.TypeMeta}
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]VerticalScaler, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}
