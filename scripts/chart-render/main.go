// Command chart-render renders a Helm chart offline the way Helm's engine
// (and gardenlet, which renders extension charts without a cluster) does:
// Go's text/template with the sprig functions plus Helm's own (include, tpl,
// required, toYaml, fromYaml, toJson, fromJson, lookup), the chart's
// values.yaml coalesced with the given values files, and the built-in
// objects .Values, .Release, .Chart, .Capabilities and .Template.
//
// It prints a JSON array with one entry per rendered document,
// {"source": "<chart>/templates/<file>", "object": {...}}, in Helm's
// template order (sorted by path); each document is parsed by
// sigs.k8s.io/yaml, the YAML library gardenlet and kubectl use. Partials
// (files starting with "_") and NOTES.txt are not rendered; a document that
// is empty after rendering is dropped. Errors name the template and line.
//
// Usage (built by scripts/chart-render.sh):
//
//	chart-render --chart charts/scion --release provider-aws \
//	  --namespace extension-provider-aws --values v.yaml [--values w.yaml] \
//	  [--kube-version 1.33.0]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/ioutil"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	"sigs.k8s.io/yaml"
)

type valuesFiles []string

func (v *valuesFiles) String() string     { return strings.Join(*v, ",") }
func (v *valuesFiles) Set(s string) error { *v = append(*v, s); return nil }

// maxRecursion bounds include/tpl nesting as Helm does.
const maxRecursion = 1000

func main() {
	chartDir := flag.String("chart", "", "chart directory")
	release := flag.String("release", "", "release name")
	namespace := flag.String("namespace", "default", "release namespace")
	kubeVersion := flag.String("kube-version", "1.33.0", "Kubernetes version for .Capabilities")
	var files valuesFiles
	flag.Var(&files, "values", "values file (repeatable, later wins)")
	flag.Parse()
	if *chartDir == "" || *release == "" {
		fail(errors.New("--chart and --release are required"))
	}
	out, err := render(*chartDir, *release, *namespace, *kubeVersion, files)
	if err != nil {
		fail(err)
	}
	os.Stdout.Write(out)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "chart-render: %v\n", err)
	os.Exit(1)
}

func readYAMLMap(file string) (map[string]interface{}, error) {
	data, err := ioutil.ReadFile(file)
	if err != nil {
		return nil, err
	}
	m := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	return m, nil
}

// coalesce merges src over dst as Helm coalesces user values over chart
// defaults: maps merge key by key, anything else replaces, and a null
// removes the default.
func coalesce(dst, src map[string]interface{}) map[string]interface{} {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		sm, sok := v.(map[string]interface{})
		dm, dok := dst[k].(map[string]interface{})
		if sok && dok {
			dst[k] = coalesce(dm, sm)
		} else {
			dst[k] = v
		}
	}
	return dst
}

type chartMeta struct {
	APIVersion  string `json:"apiVersion"`
	Name        string `json:"name"`
	Version     string `json:"version"`
	AppVersion  string `json:"appVersion"`
	Description string `json:"description"`
}

func render(chartDir, release, namespace, kubeVersion string, files []string) ([]byte, error) {
	metaBytes, err := ioutil.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	var meta chartMeta
	if err := yaml.Unmarshal(metaBytes, &meta); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %v", err)
	}
	values, err := readYAMLMap(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		user, err := readYAMLMap(f)
		if err != nil {
			return nil, err
		}
		values = coalesce(values, user)
	}
	parts := strings.SplitN(strings.TrimPrefix(kubeVersion, "v"), ".", 3)
	if len(parts) < 2 {
		return nil, fmt.Errorf("--kube-version %q: want MAJOR.MINOR[.PATCH]", kubeVersion)
	}

	// Every file under templates/, named "<chart>/templates/<path>" as Helm names them.
	var names []string
	sources := map[string]string{}
	root := filepath.Join(chartDir, "templates")
	err = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		data, err := ioutil.ReadFile(p)
		if err != nil {
			return err
		}
		name := path.Join(meta.Name, "templates", filepath.ToSlash(rel))
		names = append(names, name)
		sources[name] = string(data)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)

	t := template.New("gotpl").Option("missingkey=zero")
	depth := 0
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	funcs["toYaml"] = func(v interface{}) string {
		data, err := yaml.Marshal(v)
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(string(data), "\n")
	}
	funcs["fromYaml"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	funcs["toJson"] = func(v interface{}) string {
		data, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(data)
	}
	funcs["fromJson"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	funcs["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return v, errors.New(msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return v, errors.New(msg)
		}
		return v, nil
	}
	funcs["include"] = func(name string, data interface{}) (string, error) {
		depth++
		defer func() { depth-- }()
		if depth > maxRecursion {
			return "", fmt.Errorf("rendering template has a nested reference name: %s", name)
		}
		var buf bytes.Buffer
		if err := t.ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		depth++
		defer func() { depth-- }()
		if depth > maxRecursion {
			return "", errors.New("tpl: too deep")
		}
		c, err := t.Clone()
		if err != nil {
			return "", err
		}
		inner, err := c.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		if err := inner.Execute(&buf, data); err != nil {
			return "", err
		}
		return strings.Replace(buf.String(), "<no value>", "", -1), nil
	}
	// gardenlet renders without a cluster: lookup always finds nothing.
	funcs["lookup"] = func(string, string, string, string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	t.Funcs(funcs)
	for _, name := range names {
		if _, err := t.New(name).Parse(sources[name]); err != nil {
			return nil, err
		}
	}

	type entry struct {
		Source string      `json:"source"`
		Object interface{} `json:"object"`
	}
	result := []entry{}
	for _, name := range names {
		base := path.Base(name)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" {
			continue
		}
		top := map[string]interface{}{
			"Values": values,
			"Release": map[string]interface{}{
				"Name": release, "Namespace": namespace, "Service": "Helm",
				"IsInstall": true, "IsUpgrade": false, "Revision": 1,
			},
			"Chart": map[string]interface{}{
				"Name": meta.Name, "Version": meta.Version, "AppVersion": meta.AppVersion,
				"Description": meta.Description, "APIVersion": meta.APIVersion,
			},
			"Capabilities": map[string]interface{}{
				"KubeVersion": map[string]interface{}{
					"Version": "v" + strings.TrimPrefix(kubeVersion, "v"),
					"Major":   parts[0], "Minor": parts[1],
					"GitVersion": "v" + strings.TrimPrefix(kubeVersion, "v"),
				},
			},
			"Template": map[string]interface{}{
				"Name": name, "BasePath": path.Join(meta.Name, "templates"),
			},
		}
		var buf bytes.Buffer
		if err := t.ExecuteTemplate(&buf, name, top); err != nil {
			return nil, err
		}
		text := strings.Replace(buf.String(), "<no value>", "", -1)
		for i, doc := range splitDocuments(text) {
			if isBlank(doc) {
				continue
			}
			js, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				return nil, fmt.Errorf("%s document %d: %v\n%s", name, i, err, doc)
			}
			var obj interface{}
			if err := json.Unmarshal(js, &obj); err != nil {
				return nil, err
			}
			if obj == nil {
				continue
			}
			result = append(result, entry{Source: name, Object: obj})
		}
	}
	return json.MarshalIndent(result, "", "  ")
}

// splitDocuments splits a YAML stream on "---" lines, as Helm's releaseutil does.
func splitDocuments(text string) []string {
	var docs []string
	var cur []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "---") && strings.TrimSpace(strings.TrimLeft(line, "-")) == "" {
			docs = append(docs, strings.Join(cur, "\n"))
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	return append(docs, strings.Join(cur, "\n"))
}

// isBlank: only whitespace and comments.
func isBlank(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		l := strings.TrimSpace(line)
		if l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}
