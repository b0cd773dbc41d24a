package testserver

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// MinIO's root credentials, which the S3 environment set by MinIO carries.
const (
	MinIOAccessKey = "lochtestaccess"
	MinIOSecretKey = "lochtestsecret-9c1f2e"
)

// MinIO returns a fresh bucket on the shared MinIO server, starting it if
// needed. It sets AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION,
// points the shared config and credentials files at nothing, turns off
// EC2 metadata lookups, and clears AWS_PROFILE, AWS_SESSION_TOKEN and the
// AWS_ENDPOINT_URL variables; the URL names the endpoint:
//
//	s3://<bucket>/prefix?endpoint=http://127.0.0.1:<port>
//
// (path-style addressing follows from the IP address).
func MinIO(t testing.TB) Bucket {
	t.Helper()
	endpoint := minioServer.ensure(t, "LOCH_MINIO", func(bin, dir string, port int) *exec.Cmd {
		console, err := freePort()
		if err != nil {
			console = port + 1
		}
		cmd := exec.Command(bin, "server", "--quiet",
			"--address", fmt.Sprintf("127.0.0.1:%d", port),
			"--console-address", fmt.Sprintf("127.0.0.1:%d", console),
			"--certs-dir", filepath.Join(filepath.Dir(dir), "certs"),
			dir)
		cmd.Env = append(cleanEnv(),
			"MINIO_ROOT_USER="+MinIOAccessKey,
			"MINIO_ROOT_PASSWORD="+MinIOSecretKey,
			"MINIO_BROWSER=off",
			"MINIO_UPDATE=off",
			"MINIO_CI_CD=1",
		)
		return cmd
	}, func(endpoint string) bool {
		return httpStatus(endpoint+"/minio/health/ready") == 200
	})

	name := bucketName(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(MinIOAccessKey, MinIOSecretKey, ""),
	})
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("testserver: create MinIO bucket %q: %v", name, err)
	}

	none := filepath.Join(t.TempDir(), "none")
	env := map[string]string{
		"AWS_ACCESS_KEY_ID":           MinIOAccessKey,
		"AWS_SECRET_ACCESS_KEY":       MinIOSecretKey,
		"AWS_SESSION_TOKEN":           "",
		"AWS_REGION":                  "us-east-1",
		"AWS_DEFAULT_REGION":          "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             none,
		"AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_ENDPOINT_URL":            "",
		"AWS_ENDPOINT_URL_S3":         "",
		"AWS_S3_USE_PATH_STYLE":       "",
	}
	setenv(t, env)
	return Bucket{
		URL:      fmt.Sprintf("s3://%s/prefix?endpoint=%s", name, endpoint),
		Name:     name,
		Endpoint: endpoint,
		Env:      env,
	}
}

// Stores names the stores a test of local and object storage runs on:
// StoreURL's where.
var Stores = []string{"local", "minio"}

// StoreURL returns a fresh dataset location on where, one of Stores: a path
// under t's temporary directory, or a fresh MinIO bucket (see MinIO).
func StoreURL(t testing.TB, where string) string {
	t.Helper()
	if where == "minio" {
		return MinIO(t).URL
	}
	return filepath.Join(t.TempDir(), "ds")
}
