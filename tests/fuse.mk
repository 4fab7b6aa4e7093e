# FUSE: install the default seccomp profile where resview-runtime looks for it
# ($(PREFIX)/bin/../share/resview/seccomp.json), and the FUSE runtime name, a
# symlink (profiles/README.md "Who may ask"; FUSE stays off until fuse.allowed is set).
.PHONY: install-fuse uninstall-fuse
install: install-fuse
uninstall: uninstall-fuse
install-fuse:
	install -d $(DESTDIR)$(PREFIX)/share/resview
	install -m 0644 profiles/seccomp.json $(DESTDIR)$(PREFIX)/share/resview/seccomp.json
	ln -sfn resview-runtime $(DESTDIR)$(PREFIX)/bin/resview-runtime-fuse
uninstall-fuse:
	rm -f $(DESTDIR)$(PREFIX)/share/resview/seccomp.json $(DESTDIR)$(PREFIX)/bin/resview-runtime-fuse
	-rmdir $(DESTDIR)$(PREFIX)/share/resview 2>/dev/null
