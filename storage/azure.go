package storage

import (
	"context"
	"fmt"
	"net/url"
	"os"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"gocloud.dev/blob/azureblob"
)

// openAzure opens az://container/prefix. Credentials, first match wins:
//
//   - AZURE_STORAGE_CONNECTION_STRING (or AZURE_STORAGEBLOB_CONNECTIONSTRING),
//     which names the endpoint too; this is how Azurite is reached;
//   - AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY (shared key);
//   - AZURE_STORAGE_ACCOUNT alone: azidentity's default credential chain
//     (environment, workload identity, managed identity, Azure CLI).
//
// The service URL is https://<account>.blob.<AZURE_STORAGE_DOMAIN or
// core.windows.net>, or the URL's ?endpoint= (e.g.
// http://127.0.0.1:10000/devstoreaccount1).
//
// The SDK's own retries are turned off: the retrying Store does all the
// retrying.
func openAzure(_ context.Context, loc location) (*bucketStore, error) {
	opts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry: policy.RetryOptions{MaxRetries: -1},
	}}
	endpoint := loc.param("endpoint")
	connStr := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	if connStr == "" {
		connStr = os.Getenv("AZURE_STORAGEBLOB_CONNECTIONSTRING")
	}
	account := os.Getenv("AZURE_STORAGE_ACCOUNT")
	var client *container.Client
	var err error
	switch {
	case connStr != "":
		if endpoint != "" {
			return nil, invalidURL("?endpoint= cannot be combined with AZURE_STORAGE_CONNECTION_STRING, which names the endpoint", nil)
		}
		client, err = container.NewClientFromConnectionString(connStr, loc.bucket, opts)
		if err != nil {
			// The SDK's message may quote the connection string: leave it out.
			return nil, denied("bad AZURE_STORAGE_CONNECTION_STRING", nil)
		}
	case account != "":
		if endpoint == "" {
			domain := os.Getenv("AZURE_STORAGE_DOMAIN")
			if domain == "" {
				domain = "core.windows.net"
			}
			endpoint = fmt.Sprintf("https://%s.blob.%s", account, domain)
		}
		u, perr := url.Parse(endpoint)
		if perr != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, invalidURL(fmt.Sprintf("bad Azure endpoint %q (want http(s)://host[/account])", endpoint), nil)
		}
		containerURL := u.JoinPath(loc.bucket).String()
		if key := os.Getenv("AZURE_STORAGE_KEY"); key != "" {
			cred, cerr := container.NewSharedKeyCredential(account, key)
			if cerr != nil {
				return nil, denied("bad AZURE_STORAGE_KEY", nil)
			}
			client, err = container.NewClientWithSharedKeyCredential(containerURL, cred, opts)
		} else {
			cred, cerr := azidentity.NewDefaultAzureCredential(nil)
			if cerr != nil {
				return nil, denied("no usable Azure credentials", cerr)
			}
			client, err = container.NewClient(containerURL, cred, opts)
		}
		if err != nil {
			return nil, fmt.Errorf("azure client: %w", err)
		}
	default:
		return nil, denied("no Azure storage account: set AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT (with AZURE_STORAGE_KEY or Azure AD credentials)", nil)
	}
	b, err := azureblob.OpenBucket(context.Background(), client, nil)
	if err != nil {
		return nil, err
	}
	probe := func(ctx context.Context) error {
		_, err := client.GetProperties(ctx, nil)
		return err
	}
	return &bucketStore{b: b, name: loc.bucket, prefix: loc.prefix, url: loc.String(), probe: probe}, nil
}
