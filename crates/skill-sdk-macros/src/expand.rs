//! Generating the registration of a skill next to its untouched function.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use skill_contract::{Idempotency, RiskLevel, SideEffects};
use syn::ItemFn;
use syn::spanned::Spanned;

use crate::args::{self, Args, DeclaredImplementation, Errors, Estimate};
use crate::description::first_paragraph;
use crate::signature::{self, Signature};

/// The whole attribute: on any error, the function is still emitted (so the rest of the crate
/// keeps compiling and editors keep working), followed by the errors.
pub(crate) fn skill(attr: TokenStream, item: TokenStream) -> TokenStream {
    let function: ItemFn = match syn::parse2(item.clone()) {
        Ok(function) => function,
        Err(_) => {
            let error = syn::Error::new(Span::call_site(), "#[skill] goes on a function").to_compile_error();
            return quote! { #item #error };
        }
    };
    let mut errors = Errors::default();
    let args = match args::parse(attr, Span::call_site()) {
        Ok(args) => Some(args),
        Err(error) => {
            errors.push(error);
            None
        }
    };
    let signature = signature::check(&function, &mut errors);
    if let (Some(args), Some(signature)) = (&args, &signature) {
        signature::check_typed(
            &signature.inputs,
            "the inputs",
            "inputs_schema",
            args.inputs_schema.is_some(),
            &mut errors,
        );
        signature::check_typed(
            &signature.outputs,
            "the outputs",
            "outputs_schema",
            args.outputs_schema.is_some(),
            &mut errors,
        );
    }
    match (errors.into_result(), args, signature) {
        (Ok(()), Some(args), Some(signature)) => expand(&function, &args, &signature),
        (Err(error), _, _) => {
            let errors = error.to_compile_error();
            quote! { #function #errors }
        }
        _ => {
            let error = syn::Error::new(Span::call_site(), "invariant: arguments and signature are checked");
            let error = error.to_compile_error();
            quote! { #function #error }
        }
    }
}

fn side_effects(value: SideEffects) -> TokenStream {
    match value {
        SideEffects::None => quote!(::skill_sdk::contract::SideEffects::None),
        SideEffects::ExternalRead => quote!(::skill_sdk::contract::SideEffects::ExternalRead),
        SideEffects::ExternalWrite => quote!(::skill_sdk::contract::SideEffects::ExternalWrite),
    }
}

fn risk(value: RiskLevel) -> TokenStream {
    match value {
        RiskLevel::Low => quote!(::skill_sdk::contract::RiskLevel::Low),
        RiskLevel::Medium => quote!(::skill_sdk::contract::RiskLevel::Medium),
        RiskLevel::High => quote!(::skill_sdk::contract::RiskLevel::High),
    }
}

fn idempotency(value: Idempotency) -> TokenStream {
    match value {
        Idempotency::Required => quote!(::skill_sdk::contract::Idempotency::Required),
        Idempotency::Natural => quote!(::skill_sdk::contract::Idempotency::Natural),
        Idempotency::None => quote!(::skill_sdk::contract::Idempotency::None),
    }
}

fn option_str(value: &Option<String>) -> TokenStream {
    match value {
        Some(text) => quote!(::core::option::Option::Some(#text)),
        None => quote!(::core::option::Option::None),
    }
}

fn implementation(value: &DeclaredImplementation) -> TokenStream {
    match value {
        DeclaredImplementation::Local { entrypoint } => {
            let entrypoint = option_str(entrypoint);
            quote!(::skill_sdk::__private::DeclaredImplementation::Local { entrypoint: #entrypoint })
        }
        DeclaredImplementation::Http { endpoint, audience } => {
            let audience = option_str(audience);
            quote!(::skill_sdk::__private::DeclaredImplementation::Http { endpoint: #endpoint, audience: #audience })
        }
        DeclaredImplementation::Mcp { endpoint, tool, audience } => {
            let (tool, audience) = (option_str(tool), option_str(audience));
            quote!(::skill_sdk::__private::DeclaredImplementation::Mcp { endpoint: #endpoint, tool: #tool, audience: #audience })
        }
    }
}

fn cost_model(value: &Option<(String, Option<Estimate>)>) -> TokenStream {
    match value {
        None => quote!(::core::option::Option::None),
        Some((unit, estimate)) => {
            let estimate = match estimate {
                None => quote!(::core::option::Option::None),
                Some(Estimate::Integer(n)) => {
                    quote!(::core::option::Option::Some(::skill_sdk::__private::Estimate::Integer(#n)))
                }
                Some(Estimate::Float(f)) => {
                    quote!(::core::option::Option::Some(::skill_sdk::__private::Estimate::Float(#f)))
                }
            };
            quote!(::core::option::Option::Some(::skill_sdk::__private::DeclaredCost { unit: #unit, estimate: #estimate }))
        }
    }
}

fn expand(function: &ItemFn, args: &Args, signature: &Signature) -> TokenStream {
    let name = &function.sig.ident;
    let vis = &function.vis;
    let run_fn = format_ident!("__skill_sdk_run_{}", name);
    let inputs_fn = format_ident!("__skill_sdk_inputs_{}", name);
    let outputs_fn = format_ident!("__skill_sdk_outputs_{}", name);
    let (inputs_ty, outputs_ty) = (&signature.inputs, &signature.outputs);

    let inputs_schema = match &args.inputs_schema {
        Some(expr) => quote_spanned!(expr.span()=> ::skill_sdk::__private::explicit_schema(#expr)),
        None => quote_spanned!(inputs_ty.span()=> ::skill_sdk::__private::inputs_schema::<#inputs_ty>()),
    };
    let outputs_schema = match &args.outputs_schema {
        Some(expr) => quote_spanned!(expr.span()=> ::skill_sdk::__private::explicit_schema(#expr)),
        None => quote_spanned!(outputs_ty.span()=> ::skill_sdk::__private::outputs_schema::<#outputs_ty>()),
    };
    let call = if signature.takes_context {
        quote!(#name(inputs, ctx))
    } else {
        quote!({
            ::core::mem::drop(ctx);
            #name(inputs)
        })
    };
    let invoke = if signature.is_async {
        quote_spanned!(function.sig.ident.span()=> #call.await)
    } else {
        quote_spanned!(function.sig.ident.span()=> ::skill_sdk::__private::run_blocking(move || #call).await?)
    };
    let decode = quote_spanned!(inputs_ty.span()=> ::skill_sdk::__private::decode_inputs::<#inputs_ty>(inputs)?);
    let result_span = match &function.sig.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => function.sig.ident.span(),
    };
    let into_result = quote_spanned!(result_span=> ::skill_sdk::__private::into_result::<#outputs_ty, _>(result)?);
    let encode = quote_spanned!(outputs_ty.span()=> ::skill_sdk::__private::encode_outputs::<#outputs_ty>(&outputs));

    let skill_name = &args.name;
    let version = &args.version;
    let description = args.description.clone().unwrap_or_else(|| first_paragraph(&function.attrs));
    let side_effects = side_effects(args.side_effects);
    let risk = risk(args.risk);
    let idempotency = idempotency(args.idempotency);
    let timeout = args.timeout as u32;
    let (max_attempts, backoff) = (args.retry.0 as u32, args.retry.1 as u32);
    let permissions = &args.permissions;
    let cost_model = cost_model(&args.cost_model);
    let implementation = implementation(&args.implementation);
    let function_name = name.to_string();
    let module_doc =
        format!("The skill `{skill_name}@{version}`, declared by [`{function_name}`](fn@{function_name}).");

    quote! {
        #function

        #[doc(hidden)]
        fn #inputs_fn() -> ::skill_sdk::__private::Value {
            #inputs_schema
        }

        #[doc(hidden)]
        fn #outputs_fn() -> ::skill_sdk::__private::Value {
            #outputs_schema
        }

        #[doc(hidden)]
        fn #run_fn(inputs: ::skill_sdk::__private::Value, ctx: ::skill_sdk::SkillContext) -> ::skill_sdk::__private::Run {
            ::std::boxed::Box::pin(async move {
                let inputs = #decode;
                let result = #invoke;
                let outputs = #into_result;
                #encode
            })
        }

        #[doc = #module_doc]
        #vis mod #name {
            /// The skill: its contract, its export and its invocation.
            pub static SKILL: ::skill_sdk::Skill = ::skill_sdk::Skill::__declare(::skill_sdk::__private::Declaration {
                name: #skill_name,
                version: #version,
                description: #description,
                side_effects: #side_effects,
                risk_level: #risk,
                idempotency: #idempotency,
                timeout_seconds: #timeout,
                max_attempts: #max_attempts,
                backoff_seconds: #backoff,
                permissions: &[#(#permissions),*],
                cost_model: #cost_model,
                implementation: #implementation,
                inputs_schema: super::#inputs_fn,
                outputs_schema: super::#outputs_fn,
                run: super::#run_fn,
                function: #function_name,
                module_path: ::core::module_path!(),
                file: ::core::file!(),
                line: ::core::line!(),
            });
        }

        ::skill_sdk::__private::inventory::submit! {
            ::skill_sdk::__private::Registration(&#name::SKILL)
        }
    }
}
