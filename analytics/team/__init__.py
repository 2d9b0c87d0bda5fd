"""Team judging: accounts with hashed passwords, roles and what each may do, and the two server modes.

:mod:`.accounts` stores users in the workspace's ``users`` table (argon2 hashes, lock after repeated
wrong passwords); :mod:`.roles` is the permission table and :func:`~.roles.require`; :mod:`.server`
builds the Streamlit arguments of solo mode (127.0.0.1, no sign-in) and team mode (all interfaces,
sign-in on every page) and refuses team mode without an enabled admin; :mod:`.paths` limits the server
paths typed in the browser to the configured data roots.
"""
