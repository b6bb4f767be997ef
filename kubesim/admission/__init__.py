"""Admission plugins: LimitRanger, ResourceQuota, ServiceAccount, DefaultTolerationSeconds.

Each module is one plugin, as kube-apiserver's ``plugin/pkg/admission`` has them, with a class
that implements :class:`~kubesim.apiserver.extensions.AdmissionPlugin` and is put in a
server's admission chain by :class:`~kubesim.cluster.cluster.Cluster`. The core never imports
them.
"""
