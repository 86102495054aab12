#!/usr/bin/env python3
"""botocore's own credential resolver as the oracle of which source wins: with
the environment and files it is given, print the access key botocore resolves
and the method it names, or "ERROR <exception>: <message>".  STS, the SSO
portal and SSO OIDC are reached at the URL given (botocore 1.29 has no AWS_ENDPOINT_URL_*).

  creds_oracle.py ENDPOINT_URL
"""
import sys

import botocore.session


def main():
    url = sys.argv[1]
    s = botocore.session.Session()
    create = s.create_client

    def create_client(service, *a, **kw):
        if service in ("sts", "sso", "sso-oidc"):
            kw["endpoint_url"] = url
        return create(service, *a, **kw)

    s.create_client = create_client
    try:
        c = s.get_credentials()
        if c is None:
            print("NONE")
            return
        f = c.get_frozen_credentials()
        print("%s %s" % (f.access_key, c.method))
    except Exception as e:  # what botocore raises is the answer
        print("ERROR %s: %s" % (type(e).__name__, str(e).replace("\n", " ")))


if __name__ == "__main__":
    main()
