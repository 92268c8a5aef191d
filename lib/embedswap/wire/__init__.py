"""What goes over the wire to an embedding server: the HTTP client, the API shapes it speaks, and what makes an
answer unusable. The lowest layer the servers, the measurements and the shim all use."""
