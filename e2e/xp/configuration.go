package xp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Crossplane's Configuration packages.
var (
	ConfigurationGVR         = schema.GroupVersionResource{Group: "pkg.crossplane.io", Version: "v1", Resource: "configurations"}
	ConfigurationRevisionGVR = schema.GroupVersionResource{Group: "pkg.crossplane.io", Version: "v1", Resource: "configurationrevisions"}
)

// ApplyConfiguration applies a pkg.crossplane.io/v1 Configuration for pkg,
// as README's install does. Crossplane then installs it and resolves its
// dependencies; a Function it depends on becomes Healthy only once its
// runtime runs (ServeFunction), so wait for the packages (WaitHealthy) after
// that.
func (c *Crossplane) ApplyConfiguration(ctx context.Context, name, pkg string) error {
	return c.admin.Apply(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "pkg.crossplane.io/v1",
		"kind":       "Configuration",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"package": pkg},
	}})
}

// WaitHealthy waits until the package name (a Configuration or Function:
// gvr) is Installed and Healthy.
func (c *Crossplane) WaitHealthy(ctx context.Context, gvr schema.GroupVersionResource, name string) error {
	return poll(ctx, 250*time.Millisecond, c.o.StartTimeout, gvr.Resource+" "+name+" Installed and Healthy", func(ctx context.Context) (bool, string, error) {
		got, err := c.admin.Dynamic.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return Condition(got, "Installed") == "True" && Condition(got, "Healthy") == "True", Conditions(got), nil
	})
}

// UninstallConfiguration deletes a Configuration and waits until it and its
// revisions are gone; the objects it installed (an XRD, a Composition) go
// with its revision through their owner references, the Functions it
// depends on stay, as on a cluster.
func (c *Crossplane) UninstallConfiguration(ctx context.Context, name string) error {
	err := c.admin.Dynamic.Resource(ConfigurationGVR).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return poll(ctx, 250*time.Millisecond, c.o.StartTimeout, "Configuration "+name+" and its revisions deleted", func(ctx context.Context) (bool, string, error) {
		var left []string
		if _, err := c.admin.Dynamic.Resource(ConfigurationGVR).Get(ctx, name, metav1.GetOptions{}); err == nil {
			left = append(left, "Configuration "+name)
		} else if !apierrors.IsNotFound(err) {
			return false, err.Error(), nil
		}
		l, err := c.admin.Dynamic.Resource(ConfigurationRevisionGVR).List(ctx, metav1.ListOptions{LabelSelector: labelParentPackage + "=" + name})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, r := range l.Items {
			left = append(left, "ConfigurationRevision "+r.GetName())
		}
		return len(left) == 0, strings.Join(left, ", "), nil
	})
}

// ConfigurationRevision returns the active revision of Configuration name.
func (c *Crossplane) ConfigurationRevision(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	l, err := c.admin.Dynamic.Resource(ConfigurationRevisionGVR).List(ctx, metav1.ListOptions{LabelSelector: labelParentPackage + "=" + name})
	if err != nil {
		return nil, err
	}
	var seen []string
	for i, r := range l.Items {
		state, _, _ := unstructured.NestedString(r.Object, "spec", "desiredState")
		if state == "Active" {
			return &l.Items[i], nil
		}
		seen = append(seen, r.GetName()+" "+state)
	}
	if len(seen) == 0 {
		return nil, errors.New("Configuration " + name + " has no revision")
	}
	return nil, fmt.Errorf("Configuration %s has no active revision: %s", name, strings.Join(seen, ", "))
}
