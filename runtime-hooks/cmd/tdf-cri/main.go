// Command tdf-cri is a small CRI client (the gRPC API the kubelet uses,
// k8s.io/cri-api runtime.v1) for the tests of the Kubernetes path
// (tests/vm/cri-*.t): crictl is not on the Go proxy. Configs are protobuf
// JSON files as crictl takes them (PodSandboxConfig, ContainerConfig).
//
//	tdf-cri -e unix:///path/containerd.sock CMD ARGS
//	  version                        runtime name and version
//	  runp [-r HANDLER] POD.json     RunPodSandbox, prints the pod id
//	  create POD CTR.json POD.json   CreateContainer, prints the container id
//	  start|rm ID                    StartContainer, RemoveContainer
//	  stop ID [SECS]                 StopContainer: SIGTERM, SIGKILL after SECS (30, the
//	                                 kubelet's default grace period)
//	  stopp|rmp POD                  StopPodSandbox, RemovePodSandbox
//	  pid ID                         the container's pid (verbose status)
//	  state ID                       the container's state and exit code
//	  inspectp POD                   PodSandboxStatus (verbose), protobuf JSON
//	  ps | pods                      container / pod ids, one a line, with their state
//	  image REF                      ImageStatus: the image id, error when absent
//	  mkimage [-f SRC:/DST]... OUT.tar REF BUSYBOX CMD...   an OCI image archive (for ctr
//	                                 images import): BUSYBOX at /bin/busybox, applet links,
//	                                 each host file SRC at DST, CMD as its command
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	args := os.Args[1:]
	endpoint := os.Getenv("CONTAINER_RUNTIME_ENDPOINT")
	if len(args) >= 2 && (args[0] == "-e" || args[0] == "--endpoint") {
		endpoint, args = args[1], args[2:]
	}
	if len(args) == 0 {
		fail(fmt.Errorf("usage: tdf-cri -e ENDPOINT CMD ARGS (see the source)"))
	}
	if args[0] == "mkimage" {
		var files []file
		args = args[1:]
		for len(args) >= 2 && args[0] == "-f" {
			f, err := parseFile(args[1])
			if err != nil {
				fail(err)
			}
			files, args = append(files, f), args[2:]
		}
		if len(args) < 4 {
			fail(fmt.Errorf("usage: mkimage [-f SRC:/DST]... OUT.tar REF BUSYBOX CMD..."))
		}
		fail(mkimage(args[0], args[1], args[2], files, args[3:]))
		return
	}
	if endpoint == "" {
		fail(fmt.Errorf("no endpoint (-e unix:///path or CONTAINER_RUNTIME_ENDPOINT)"))
	}
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fail(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rt, img := cri.NewRuntimeServiceClient(conn), cri.NewImageServiceClient(conn)
	fail(run(ctx, rt, img, args[0], args[1:]))
}

func need(args []string, n int, usage string) error {
	if len(args) != n {
		return fmt.Errorf("usage: %s", usage)
	}
	return nil
}

func load(path string, m proto.Message) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := protojson.Unmarshal(b, m); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

func run(ctx context.Context, rt cri.RuntimeServiceClient, img cri.ImageServiceClient, cmd string, args []string) error {
	switch cmd {
	case "version":
		r, err := rt.Version(ctx, &cri.VersionRequest{})
		if err != nil {
			return err
		}
		fmt.Printf("%s %s (CRI %s)\n", r.RuntimeName, r.RuntimeVersion, r.RuntimeApiVersion)
	case "runp":
		handler := ""
		if len(args) == 3 && args[0] == "-r" {
			handler, args = args[1], args[2:]
		}
		if err := need(args, 1, "runp [-r HANDLER] POD.json"); err != nil {
			return err
		}
		var pc cri.PodSandboxConfig
		if err := load(args[0], &pc); err != nil {
			return err
		}
		r, err := rt.RunPodSandbox(ctx, &cri.RunPodSandboxRequest{Config: &pc, RuntimeHandler: handler})
		if err != nil {
			return err
		}
		fmt.Println(r.PodSandboxId)
	case "create":
		if err := need(args, 3, "create POD CTR.json POD.json"); err != nil {
			return err
		}
		var cc cri.ContainerConfig
		var pc cri.PodSandboxConfig
		if err := load(args[1], &cc); err != nil {
			return err
		}
		if err := load(args[2], &pc); err != nil {
			return err
		}
		r, err := rt.CreateContainer(ctx, &cri.CreateContainerRequest{PodSandboxId: args[0], Config: &cc, SandboxConfig: &pc})
		if err != nil {
			return err
		}
		fmt.Println(r.ContainerId)
	case "stop":
		secs := int64(30)
		if len(args) == 2 {
			if _, err := fmt.Sscan(args[1], &secs); err != nil {
				return fmt.Errorf("stop ID [SECS]: %v", err)
			}
			args = args[:1]
		}
		if err := need(args, 1, "stop ID [SECS]"); err != nil {
			return err
		}
		_, err := rt.StopContainer(ctx, &cri.StopContainerRequest{ContainerId: args[0], Timeout: secs})
		return err
	case "start", "rm", "stopp", "rmp", "pid", "state", "inspectp", "image":
		if err := need(args, 1, cmd+" ID"); err != nil {
			return err
		}
		return one(ctx, rt, img, cmd, args[0])
	case "ps":
		r, err := rt.ListContainers(ctx, &cri.ListContainersRequest{})
		if err != nil {
			return err
		}
		for _, c := range r.Containers {
			fmt.Println(c.Id, c.State)
		}
	case "pods":
		r, err := rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{})
		if err != nil {
			return err
		}
		for _, p := range r.Items {
			fmt.Println(p.Id, p.State)
		}
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
	return nil
}

func one(ctx context.Context, rt cri.RuntimeServiceClient, img cri.ImageServiceClient, cmd, id string) error {
	var err error
	switch cmd {
	case "start":
		_, err = rt.StartContainer(ctx, &cri.StartContainerRequest{ContainerId: id})
	case "rm":
		_, err = rt.RemoveContainer(ctx, &cri.RemoveContainerRequest{ContainerId: id})
	case "stopp":
		_, err = rt.StopPodSandbox(ctx, &cri.StopPodSandboxRequest{PodSandboxId: id})
	case "rmp":
		_, err = rt.RemovePodSandbox(ctx, &cri.RemovePodSandboxRequest{PodSandboxId: id})
	case "pid", "state":
		r, e := rt.ContainerStatus(ctx, &cri.ContainerStatusRequest{ContainerId: id, Verbose: true})
		if e != nil {
			return e
		}
		if cmd == "state" {
			fmt.Println(r.Status.State, r.Status.ExitCode, r.Status.Reason)
			return nil
		}
		var info struct {
			Pid int `json:"pid"`
		}
		if e := json.Unmarshal([]byte(r.Info["info"]), &info); e != nil || info.Pid == 0 {
			return fmt.Errorf("no pid in the verbose status of %s", id)
		}
		fmt.Println(info.Pid)
	case "inspectp":
		r, e := rt.PodSandboxStatus(ctx, &cri.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
		if e != nil {
			return e
		}
		b, _ := protojson.Marshal(r)
		fmt.Println(string(b))
	case "image":
		r, e := img.ImageStatus(ctx, &cri.ImageStatusRequest{Image: &cri.ImageSpec{Image: id}})
		if e != nil {
			return e
		}
		if r.Image == nil {
			return fmt.Errorf("image %s not found", id)
		}
		fmt.Println(r.Image.Id)
	}
	return err
}

func fail(err error) {
	if err == nil {
		return
	}
	fmt.Fprintf(os.Stderr, "tdf-cri: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	os.Exit(1)
}
