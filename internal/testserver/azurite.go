package testserver

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Azurite's well-known development account.
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Azurite returns a fresh container on the shared Azurite blob server,
// starting it if needed. It sets AZURE_STORAGE_CONNECTION_STRING (and
// clears AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY); the URL is
// az://<container>/prefix.
func Azurite(t testing.TB) Bucket {
	t.Helper()
	endpoint := azuriteServer.ensure(t, "LOCH_AZURITE", func(bin, dir string, port int) *exec.Cmd {
		cmd := exec.Command(bin,
			"--blobHost", "127.0.0.1",
			"--blobPort", strconv.Itoa(port),
			"--location", dir,
			"--skipApiVersionCheck",
			"--disableTelemetry",
			"--silent",
		)
		cmd.Env = cleanEnv()
		return cmd
	}, func(endpoint string) bool {
		// Any HTTP answer will do: an unauthenticated request gets 403.
		return httpStatus(endpoint+"/"+AzuriteAccount+"?comp=list") != 0
	})

	conn := fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s/%s;",
		AzuriteAccount, AzuriteKey, endpoint, AzuriteAccount)
	name := bucketName(t)
	c, err := container.NewClientFromConnectionString(conn, name, nil)
	if err != nil {
		t.Fatalf("testserver: Azurite client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Create(ctx, nil); err != nil {
		t.Fatalf("testserver: create Azurite container %q: %v", name, err)
	}

	env := map[string]string{
		"AZURE_STORAGE_CONNECTION_STRING":    conn,
		"AZURE_STORAGEBLOB_CONNECTIONSTRING": "",
		"AZURE_STORAGE_ACCOUNT":              "",
		"AZURE_STORAGE_KEY":                  "",
	}
	setenv(t, env)
	return Bucket{
		URL:      fmt.Sprintf("az://%s/prefix", name),
		Name:     name,
		Endpoint: endpoint,
		Env:      env,
	}
}
