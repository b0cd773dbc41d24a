package storage

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"gocloud.dev/blob/azureblob"
)

// openAzure opens az://container/prefix. Credentials, first match wins:
//
//   - the settings (WithSettings): connection_string; or account_name with
//     account_key (shared key), sas_token, or neither (Azure AD
//     credentials). When they name an account or a connection string,
//     the environment below is not read;
//   - AZURE_STORAGE_CONNECTION_STRING (or AZURE_STORAGEBLOB_CONNECTIONSTRING),
//     which names the endpoint too; this is how Azurite is reached;
//   - AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY (shared key);
//   - AZURE_STORAGE_ACCOUNT alone: azidentity's default credential chain
//     (environment, workload identity, managed identity, Azure CLI).
//
// The service URL is the settings' endpoint, else the URL's ?endpoint=
// (e.g. http://127.0.0.1:10000/devstoreaccount1), else
// https://<account>.blob.<AZURE_STORAGE_DOMAIN or core.windows.net>.
//
// The SDK's own retries are turned off: the retrying Store does all the
// retrying.
func openAzure(_ context.Context, loc location, settings Settings) (*bucketStore, error) {
	opts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry: policy.RetryOptions{MaxRetries: -1},
	}}
	endpoint := settings.Endpoint
	if endpoint == "" {
		endpoint = loc.param("endpoint")
	}
	connStr, account, key, sas := settings.AzureConnectionString, settings.AzureAccount, settings.AzureAccountKey, settings.AzureSASToken
	if connStr == "" && account == "" {
		connStr = os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
		if connStr == "" {
			connStr = os.Getenv("AZURE_STORAGEBLOB_CONNECTIONSTRING")
		}
		account = os.Getenv("AZURE_STORAGE_ACCOUNT")
		key = os.Getenv("AZURE_STORAGE_KEY")
	}
	var client *container.Client
	var err error
	switch {
	case connStr != "":
		if endpoint != "" {
			return nil, invalidURL("an endpoint cannot be combined with a connection string, which names the endpoint", nil)
		}
		client, err = container.NewClientFromConnectionString(connStr, loc.bucket, opts)
		if err != nil {
			// The SDK's message may quote the connection string: leave it out.
			return nil, denied("bad Azure connection string", nil)
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
		containerURL := u.JoinPath(loc.bucket)
		switch {
		case key != "":
			cred, cerr := container.NewSharedKeyCredential(account, key)
			if cerr != nil {
				return nil, denied("bad Azure account key", nil)
			}
			client, err = container.NewClientWithSharedKeyCredential(containerURL.String(), cred, opts)
		case sas != "":
			containerURL.RawQuery = strings.TrimPrefix(sas, "?")
			client, err = container.NewClientWithNoCredential(containerURL.String(), opts)
		default:
			cred, cerr := azidentity.NewDefaultAzureCredential(nil)
			if cerr != nil {
				return nil, denied("no usable Azure credentials", cerr)
			}
			client, err = container.NewClient(containerURL.String(), cred, opts)
		}
		if err != nil {
			return nil, denied("azure client", nil) // the cause may quote a signed URL
		}
	default:
		return nil, denied("no Azure storage account: give storage settings, or set AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT (with AZURE_STORAGE_KEY or Azure AD credentials)", nil)
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
